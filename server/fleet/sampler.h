#pragma once
// Sampler runs the fleet's sampling policy (`fleetprof sampling set`): on the leader only, each
// period it draws live targets at random (SamplingPlan: one inclusion probability for every
// target) and starts one SAMPLED capture per pick, of that single target, within the overhead
// budget and max_concurrent. The policy and the leader's progress (SamplingState: period start,
// seed, counters, per-period spend, picks still waiting) live in the catalog, written before a
// period's captures start, by compare-and-set: a new leader after a failover or a restart goes
// on from the stored state, and a period is never run twice (at most once: a leader that dies
// between the write and the starts loses those picks, it never repeats them).
// Transport-free: the gRPC SamplingService and the HTTP API both call Set/Get/Disable.
//
// Locks: mu_ orders the readers and writers of the stored state (Tick, Set, Get, Disable,
// ReserveTriggered); it is held across the catalog's compare-and-set but never across a capture
// start. tick_mu_, taken before it, spans a tick with its capture starts, and Set and Disable
// take it too, so that once `sampling off` answers no capture of the policy starts any more.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "auth/scopes.h"
#include "common/clock.h"
#include "common/periodic_loop.h"
#include "fleetprof/v1/sampling.pb.h"
#include "server/fleet/sampling_plan.h"
#include "storage/catalog.h"
#include "storage/sampling_state_store.h"

namespace fleetprof {

class ServerMetrics;

// What the sampler needs from the fleet, as functions so the simulated-time test and the bench
// drive it without agents or captures (the server wires them to AgentRegistry and
// CaptureCoordinator: sampler_fleet.h).
struct SamplerFleet {
  // The live targets with their jobs' labels, devices and whether a capture runs on them.
  std::function<std::vector<SampledTarget>()> live_targets;
  // Sampled captures running now.
  std::function<int()> sampled_in_flight;
  // Starts a SAMPLED capture of the pick's single target, `duration_ms` long, the pick's
  // weight on its target; the capture's id, or why it did not start.
  std::function<absl::StatusOr<std::string>(const v1::SamplingPick& pick, int64_t duration_ms)> start;
  // The seed of a new policy's draws; null: a random one (tests fix it).
  std::function<uint64_t()> seed;
};

class Sampler {
 public:
  static constexpr int64_t kMinEveryMs = 1000;
  static constexpr int64_t kMaxEveryMs = int64_t{7} * 24 * 3600 * 1000;
  static constexpr int64_t kDefaultDurationMs = 2000;
  static constexpr int32_t kMaxConcurrentLimit = 1000;
  static constexpr int kMaxLabels = 32;

  // `leads` (a cluster replica): whether this replica leads; null: always. `metrics` may be null.
  Sampler(Catalog* catalog, SamplerFleet fleet, Clock* clock, ServerMetrics* metrics,
          std::function<bool()> leads = nullptr);
  ~Sampler();

  // Starts the loop on the clock (the server); tests call Tick themselves.
  void Start();

  absl::StatusOr<v1::SamplingStatus> Set(const v1::SetSamplingRequest& request, const Principal& caller)
      ABSL_LOCKS_EXCLUDED(tick_mu_, mu_);
  absl::StatusOr<v1::SamplingStatus> Get() ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<v1::SamplingStatus> Disable() ABSL_LOCKS_EXCLUDED(tick_mu_, mu_);

  // For triggered captures (a trigger's firing): true when sampling is off; else true only when
  // `device_ns` fits in the current period's budget, which it is then charged to.
  bool ReserveTriggered(int64_t device_ns) ABSL_LOCKS_EXCLUDED(mu_);

  // Begins the period due at `now` (if one is) and starts the picks that fit; returns when to
  // look again. The loop's tick; public for tests and the bench.
  int64_t Tick(int64_t now) ABSL_LOCKS_EXCLUDED(tick_mu_, mu_);

  // The policy's checks, with a reason a user can act on.
  static absl::Status CheckPolicy(const v1::SetSamplingRequest& request);

 private:
  v1::SamplingStatus StatusOf(const v1::SamplingState& state) const;
  // Plans this tick under mu_: the picks to start, with the state already stored.
  std::vector<v1::SamplingPick> PlanTick(int64_t now, int64_t* next, int64_t* duration_ms)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(tick_mu_) ABSL_LOCKS_EXCLUDED(mu_);

  SamplingStateStore store_;  // read and written under mu_
  const SamplerFleet fleet_;
  Clock* clock_;
  ServerMetrics* metrics_;
  const std::function<bool()> leads_;
  // Held across a whole tick, its capture starts included, and by Set and Disable: once they
  // return, no pick of the policy before them is still being started.
  absl::Mutex tick_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  absl::Mutex mu_;
  std::unique_ptr<PeriodicLoop> loop_;  // last: it stops before the members it uses go
};

}  // namespace fleetprof
