#include "collectors/kineto_start.h"

#include "absl/strings/str_cat.h"
#include "common/kineto_timing.h"

namespace fleetprof {

int64_t KinetoWarmupMs(const KinetoTraceRequest& request) {
  return request.warmup_secs >= 0 ? request.warmup_secs * 1'000 : kKinetoWarmupMs;
}

bool HasCheckedStart(const KinetoTraceRequest& request) {
  return request.iterations == 0 && !request.memory_snapshot && request.start_time_unix_ms > 0;
}

KinetoStartDecision DecideKinetoStart(const KinetoTraceRequest& request, int64_t now_unix_ms, bool may_move) {
  KinetoStartDecision decision;
  decision.start_time_unix_ms = request.start_time_unix_ms;
  if (!HasCheckedStart(request)) return decision;
  const int64_t warmup_ms = KinetoWarmupMs(request);
  const int64_t ahead_ms = request.start_time_unix_ms - now_unix_ms;
  if (may_move) {
    if (ahead_ms >= warmup_ms + kKinetoStartMarginMs) return decision;
    decision.outcome = KinetoStartDecision::Outcome::kMoved;
    decision.start_time_unix_ms = now_unix_ms + warmup_ms + kKinetoStartMarginMs;
    decision.reason = absl::StrCat("the job took the config ", warmup_ms + kKinetoStartMarginMs - ahead_ms,
                                   " ms too late for the shared start (busy or a late poll); its trace starts ",
                                   warmup_ms + kKinetoStartMarginMs, " ms after hand-out: its ", warmup_ms,
                                   " ms warm-up and a margin");
    return decision;
  }
  if (ahead_ms >= warmup_ms) return decision;
  decision.outcome = KinetoStartDecision::Outcome::kRefused;
  if (ahead_ms < -kKinetoMaxStartAgeMs) {
    decision.reason = absl::StrCat("the job would reject the config as invalid: its start time is ", -ahead_ms,
                                   " ms in the past, more than libkineto's ", kKinetoMaxStartAgeMs, " ms");
  } else if (ahead_ms < 0) {
    decision.reason = absl::StrCat("the job would not start tracing: start timestamp is in the past by ", -ahead_ms,
                                   " ms when it took the config (libkineto's check)");
  } else {
    decision.reason = absl::StrCat("the job would not start tracing: insufficient time for warmup (", ahead_ms,
                                   " ms to the start when it took the config, ", warmup_ms,
                                   " ms of warm-up needed; libkineto's check)");
  }
  return decision;
}

std::optional<int64_t> LastHandOutMs(const KinetoTraceRequest& request) {
  if (!HasCheckedStart(request)) return std::nullopt;
  return request.start_time_unix_ms - KinetoWarmupMs(request);
}

}  // namespace fleetprof
