#pragma once
// Whether a PyTorch job would start the trace a config asks for, judged by the daemon at the
// moment it hands the config out (libkineto's rules, common/kineto_timing.h): a refused start
// writes no trace and is reported only in the job's own log, so the agent decides first and
// says why. Pure functions of the request and the time: the endpoint applies them under its
// lock, tests call them directly.

#include <cstdint>
#include <optional>
#include <string>

#include "collectors/kineto_config.h"

namespace fleetprof {

struct KinetoStartDecision {
  enum class Outcome {
    kAsAsked,  // hand the config out unchanged
    kMoved,    // hand it out with start_time_unix_ms moved later (the capture allowed it)
    kRefused,  // the job would refuse it: do not hand it out
  };
  Outcome outcome = Outcome::kAsAsked;
  int64_t start_time_unix_ms = 0;  // the start handed out (0: none, the job picks its own)
  std::string reason;              // kMoved and kRefused: why, in libkineto's terms
};

// The warm-up the job applies to `request` (ACTIVITIES_WARMUP_PERIOD_SECS, else its default).
int64_t KinetoWarmupMs(const KinetoTraceRequest& request);

// True when the job checks `request`'s start time at all: a duration trace with a start set.
// Iteration traces, memory snapshots and configs without a start have no such check.
bool HasCheckedStart(const KinetoTraceRequest& request);

// Hands out `request` at `now_unix_ms`. With `may_move`, a start less than warm-up + margin
// away moves to now + warm-up + margin; without, one less than the warm-up away is refused.
KinetoStartDecision DecideKinetoStart(const KinetoTraceRequest& request, int64_t now_unix_ms, bool may_move);

// The last moment a config with a fixed start can still be handed out and be accepted:
// start - warm-up. nullopt when the job makes no such check (HasCheckedStart is false).
std::optional<int64_t> LastHandOutMs(const KinetoTraceRequest& request);

}  // namespace fleetprof
