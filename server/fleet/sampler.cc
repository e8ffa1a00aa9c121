#include "server/fleet/sampler.h"

#include <algorithm>
#include <optional>
#include <random>

#include "absl/strings/str_cat.h"
#include "common/text_checks.h"
#include "server/server_metrics.h"
#include "spdlog/spdlog.h"

namespace fleetprof {
namespace {

constexpr int64_t kNanosPerMs = 1'000'000;
constexpr int64_t kSecondNs = 1'000'000'000;

uint64_t RandomSeed() {
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) ^ device();
}

}  // namespace

Sampler::Sampler(Catalog* catalog, SamplerFleet fleet, Clock* clock, ServerMetrics* metrics,
                 std::function<bool()> leads)
    : store_(catalog), fleet_(std::move(fleet)), clock_(clock), metrics_(metrics), leads_(std::move(leads)) {}

Sampler::~Sampler() { Stop(); }

void Sampler::Start() {
  absl::MutexLock lock(&loop_mu_);
  if (stopped_ || loop_ != nullptr) return;
  loop_ = PeriodicLoop::StartOrLog(
      "the sampler", clock_, [this](int64_t now) { return Tick(now); }, "sampled captures will not run");
}

void Sampler::Stop() {
  std::unique_ptr<PeriodicLoop> loop;
  {
    absl::MutexLock lock(&loop_mu_);
    stopped_ = true;
    loop = std::move(loop_);
  }
  // Outside loop_mu_: the loop's destructor waits for the tick in progress (its catalog write
  // and capture starts), which no caller of Set should wait on a second time for its nudge.
  loop.reset();
}

absl::Status Sampler::CheckPolicy(const v1::SetSamplingRequest& r) {
  if (r.every_ms() < kMinEveryMs || r.every_ms() > kMaxEveryMs) {
    return absl::InvalidArgumentError(absl::StrCat("--every must lie between 1s and 7d (", kMinEveryMs, " to ",
                                                   kMaxEveryMs, " ms), not ", r.every_ms(), " ms"));
  }
  if (r.duration_ms() < 0 || r.duration_ms() > 10 * 60 * 1000) {
    return absl::InvalidArgumentError(
        absl::StrCat("duration_ms must lie in 0..600000 (0: ", kDefaultDurationMs, "), not ", r.duration_ms()));
  }
  const int64_t duration_ms = r.duration_ms() == 0 ? kDefaultDurationMs : r.duration_ms();
  if (duration_ms >= r.every_ms()) {
    return absl::InvalidArgumentError(absl::StrCat("the period (--every, ", r.every_ms(),
                                                   " ms) is too short: it must be longer than one capture (",
                                                   duration_ms, " ms)"));
  }
  if (!(r.max_overhead() > 0 && r.max_overhead() <= 0.5)) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_overhead must lie in (0, 0.5] (a fraction: 1% is 0.01), not ", r.max_overhead()));
  }
  if (r.max_concurrent() < 0 || r.max_concurrent() > kMaxConcurrentLimit) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_concurrent must lie in 0..", kMaxConcurrentLimit, " (0: 16), not ", r.max_concurrent()));
  }
  if (r.labels_size() > kMaxLabels) {
    return absl::InvalidArgumentError(absl::StrCat("at most ", kMaxLabels, " labels"));
  }
  for (const auto& [key, value] : r.labels()) {
    if (key.empty()) return absl::InvalidArgumentError("a label needs a key (--label k=v)");
    if (absl::Status s = CheckPrintableText("label key", key, 253); !s.ok()) return s;
    if (absl::Status s = CheckPrintableText("label value", value, 253); !s.ok()) return s;
  }
  return absl::OkStatus();
}

v1::SamplingStatus Sampler::StatusOf(const v1::SamplingState& state) const {
  v1::SamplingStatus status;
  const v1::SetSamplingRequest& policy = state.policy();
  status.set_enabled(state.enabled());
  status.set_every_ms(policy.every_ms());
  status.set_duration_ms(policy.duration_ms());
  status.set_max_overhead(policy.max_overhead());
  *status.mutable_labels() = policy.labels();
  status.set_max_concurrent(policy.max_concurrent());
  status.set_periods(state.periods());
  status.set_captures(state.captures());
  status.set_skipped_busy(state.skipped_busy());
  status.set_overhead_last_hour(SamplingPlan::OverheadLastHour(state, clock_->Now()));
  if (state.enabled()) status.set_next_period_ns(state.period_start_ns() + policy.every_ms() * kNanosPerMs);
  status.set_set_at_ns(state.set_at_ns());
  status.set_set_by(state.set_by());
  return status;
}

absl::StatusOr<v1::SamplingStatus> Sampler::Set(const v1::SetSamplingRequest& request, const Principal& caller) {
  if (absl::Status s = CheckPolicy(request); !s.ok()) return s;
  v1::SamplingState state;
  *state.mutable_policy() = request;
  if (request.duration_ms() == 0) state.mutable_policy()->set_duration_ms(kDefaultDurationMs);
  if (request.max_concurrent() == 0) state.mutable_policy()->set_max_concurrent(SamplingPlan::kDefaultMaxConcurrent);
  const int64_t now = clock_->Now();
  state.set_enabled(true);
  // The first period begins at the next tick, now: one period before it "ended" now.
  state.set_period_start_ns(now - request.every_ms() * kNanosPerMs);
  state.set_set_at_ns(now);
  state.set_set_by(caller.name);
  state.set_seed(fleet_.seed ? fleet_.seed() : RandomSeed());
  {
    absl::MutexLock ticking(&tick_mu_);  // after the tick in progress has started its picks
    absl::Status stored = absl::AbortedError("sampling state: lost every race to other writers");
    for (int attempt = 0; attempt < kMaxAttempts && absl::IsAborted(stored); ++attempt) {
      // Whatever is stored (a damaged record too) is replaced: the policy being set is the truth.
      // A lost race (a firing's reservation) is read afresh and replaced all the same.
      auto bytes = store_.LoadBytes();
      if (!bytes.ok()) return bytes.status();
      stored = store_.PutIfUnchanged(state, *bytes);
    }
    if (!stored.ok()) return stored;
  }
  spdlog::info("sampling set every_ms={} duration_ms={} max_overhead={} max_concurrent={} by={} (p={})",
               state.policy().every_ms(), state.policy().duration_ms(), state.policy().max_overhead(),
               state.policy().max_concurrent(), caller.name, SamplingPlan::InclusionProbability(state.policy()));
  {
    absl::MutexLock lock(&loop_mu_);
    if (loop_ != nullptr) loop_->Nudge();
  }
  return StatusOf(state);
}

absl::StatusOr<v1::SamplingStatus> Sampler::Get() {
  auto loaded = store_.Load();
  if (!loaded.ok()) return loaded.status();
  if (!loaded->has_value()) return v1::SamplingStatus();
  return StatusOf((*loaded)->state);
}

absl::StatusOr<v1::SamplingStatus> Sampler::Disable() {
  absl::MutexLock ticking(&tick_mu_);  // after the tick in progress has started its picks
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    auto loaded = store_.Load();
    if (!loaded.ok()) return loaded.status();
    if (!loaded->has_value()) return v1::SamplingStatus();
    v1::SamplingState state = (*loaded)->state;
    if (!state.enabled()) return StatusOf(state);
    state.set_enabled(false);
    state.clear_pending();  // picks of a policy that is off never start
    absl::Status s = store_.PutIfUnchanged(state, (*loaded)->bytes);
    if (absl::IsAborted(s)) continue;  // another writer first: judge its state afresh
    if (!s.ok()) return s;
    spdlog::info("sampling off after {} periods, {} captures", state.periods(), state.captures());
    return StatusOf(state);
  }
  return absl::AbortedError("sampling off: lost every race to other writers of the sampling state; try again");
}

bool Sampler::ReserveTriggered(int64_t device_ns) {
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    auto loaded = store_.Load();
    if (!loaded.ok()) return false;  // cannot tell what the budget has left
    if (!loaded->has_value() || !(*loaded)->state.enabled()) return true;
    v1::SamplingState state = (*loaded)->state;
    if (state.spend().empty() || state.spend().rbegin()->period_start_ns() != state.period_start_ns()) return false;
    v1::SamplingPeriodSpend* spend = state.mutable_spend(state.spend_size() - 1);
    const int64_t budget =
        static_cast<int64_t>(state.policy().max_overhead() * static_cast<double>(spend->fleet_device_ns()));
    if (device_ns < 0 || spend->captured_device_ns() + device_ns > budget) return false;
    spend->set_captured_device_ns(spend->captured_device_ns() + device_ns);
    absl::Status s = store_.PutIfUnchanged(state, (*loaded)->bytes);
    // A tick (or another firing) stored first: its spend may leave no room now, so judge again.
    if (!absl::IsAborted(s)) return s.ok();
  }
  return false;
}

std::vector<v1::SamplingPick> Sampler::PlanTick(int64_t now, int64_t* next, int64_t* duration_ms) {
  *next = now + kSecondNs;
  // Listed once per tick, with no lock a reader takes held (Locks in sampler.h).
  std::optional<std::vector<SampledTarget>> targets;
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    auto loaded = store_.Load();
    if (!loaded.ok()) {
      spdlog::warn("sampling: the state cannot be read: {}", std::string(loaded.status().message()));
      return {};
    }
    if (!loaded->has_value() || !(*loaded)->state.enabled()) {
      if (metrics_ != nullptr) metrics_->SetSamplingOverheadRatio(0);
      return {};
    }
    v1::SamplingState state = (*loaded)->state;
    const int64_t every_ns = state.policy().every_ms() * kNanosPerMs;
    *duration_ms = state.policy().duration_ms();
    if (!targets) targets = fleet_.live_targets();
    bool changed = false;
    if (now >= state.period_start_ns() + every_ns) {
      // Periods that came due while no leader ran are not run late: the one holding `now` begins.
      const int64_t start = state.period_start_ns() + (now - state.period_start_ns()) / every_ns * every_ns;
      SamplingPlan::BeginPeriod(&state, *targets, start);
      changed = true;
    }
    PlanStep step;
    if (!state.pending().empty()) step = SamplingPlan::Dispatch(&state, *targets, fleet_.sampled_in_flight());
    if (changed || !step.start.empty() || step.skipped_busy > 0 || step.dropped > 0) {
      absl::Status s = store_.PutIfUnchanged(state, (*loaded)->bytes);
      if (absl::IsAborted(s)) {
        // Another writer stored first: a firing's reservation, or another replica (a leader
        // that has not noticed it is not one). Its word stands: plan again on top of it, so a
        // period it began is not begun twice and picks it dispatched are not started again.
        continue;
      }
      if (!s.ok()) {
        spdlog::warn("sampling: state not stored, no capture started: {}", std::string(s.message()));
        return {};
      }
    }
    if (metrics_ != nullptr) metrics_->SetSamplingOverheadRatio(SamplingPlan::OverheadLastHour(state, now));
    *next = state.period_start_ns() + every_ns;
    if (!state.pending().empty()) {
      // Waiting picks start as captures end: look again within half a capture.
      *next = std::min(*next, now + std::max(kSecondNs, *duration_ms * kNanosPerMs / 2));
    }
    return std::move(step.start);
  }
  spdlog::warn("sampling: state not stored after {} lost races to other writers, no capture started", kMaxAttempts);
  return {};
}

int64_t Sampler::Tick(int64_t now) {
  if (leads_ && !leads_()) return now + kSecondNs;  // another replica samples
  // Held across the catalog write and the capture starts: one tick at a time, and Set and
  // Disable wait for its starts. Get and ReserveTriggered never take it, so they never wait.
  absl::MutexLock ticking(&tick_mu_);
  int64_t next = now + kSecondNs, duration_ms = 0;
  for (const v1::SamplingPick& pick : PlanTick(now, &next, &duration_ms)) {
    auto started = fleet_.start(pick, duration_ms);
    if (!started.ok()) {
      spdlog::warn("sampled capture of {} on {} (job {}) did not start: {}", pick.target(), pick.node(), pick.job(),
                   std::string(started.status().message()));
    }
  }
  return next;
}

}  // namespace fleetprof
