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
// Locks: no lock of the sampler is held while a reader waits on the catalog or the fleet. The
// stored state is the truth and its compare-and-set the conflict check: Get reads it with no lock
// at all, ReserveTriggered (a trigger's firing) reads and writes it with none, trying again when
// another writer got there first, as Tick, Set and Disable do. tick_mu_ serializes Tick, Set and
// Disable only, and is held across a tick's catalog write, fleet listing and capture starts: once
// `sampling off` (or a new set) answers, no capture of the policy before it starts any more.
// Neither reader takes it. loop_mu_ guards the loop (Start, Stop, Set's nudge) and nothing else.

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

  // Starts the loop on the clock (the server), unless Stop ran; tests call Tick themselves.
  void Start() ABSL_LOCKS_EXCLUDED(loop_mu_);

  // Stops the loop, waiting for a tick in progress (its capture starts included); no tick runs
  // after. Set, Get, Disable and ReserveTriggered go on working (the server drains: the sampler
  // stops before storage is flushed). Safe to call from any thread, more than once.
  void Stop() ABSL_LOCKS_EXCLUDED(loop_mu_, tick_mu_);

  // Waits for a tick in progress (not for the catalog's readers: see Locks above).
  absl::StatusOr<v1::SamplingStatus> Set(const v1::SetSamplingRequest& request, const Principal& caller)
      ABSL_LOCKS_EXCLUDED(tick_mu_, loop_mu_);
  // Takes no lock: never waits behind a tick, its catalog write or its capture starts.
  absl::StatusOr<v1::SamplingStatus> Get();
  absl::StatusOr<v1::SamplingStatus> Disable() ABSL_LOCKS_EXCLUDED(tick_mu_);

  // For triggered captures (a trigger's firing): true when sampling is off; else true only when
  // `device_ns` fits in the current period's budget, which it is then charged to. Takes no lock
  // (see Locks above): a tick's capture starts never hold it back.
  bool ReserveTriggered(int64_t device_ns);

  // Begins the period due at `now` (if one is) and starts the picks that fit; returns when to
  // look again. The loop's tick; public for tests and the bench.
  int64_t Tick(int64_t now) ABSL_LOCKS_EXCLUDED(tick_mu_);

  // The policy's checks, with a reason a user can act on.
  static absl::Status CheckPolicy(const v1::SetSamplingRequest& request);

 private:
  // Compare-and-set tries of one write of the state before giving up (ABORTED): each lost race
  // is another writer's word landing first, so a few suffice unless replicas fight.
  static constexpr int kMaxAttempts = 8;

  v1::SamplingStatus StatusOf(const v1::SamplingState& state) const;
  // Plans this tick on the stored state and stores the plan: the picks to start. A lost
  // compare-and-set plans again on the state that won.
  std::vector<v1::SamplingPick> PlanTick(int64_t now, int64_t* next, int64_t* duration_ms)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(tick_mu_);

  // Thread-safe (the catalog is) and guarded by no lock: the compare-and-set orders its writers.
  SamplingStateStore store_;
  const SamplerFleet fleet_;
  Clock* clock_;
  ServerMetrics* metrics_;
  const std::function<bool()> leads_;
  // One tick at a time, and Set and Disable between ticks; held across I/O (see Locks above),
  // so no reader may ever take it. It guards no member: what it orders is in the catalog.
  absl::Mutex tick_mu_;
  // Never held across I/O or a tick: Stop moves the loop out under it and joins outside.
  absl::Mutex loop_mu_;
  bool stopped_ ABSL_GUARDED_BY(loop_mu_) = false;
  std::unique_ptr<PeriodicLoop> loop_ ABSL_GUARDED_BY(loop_mu_);  // last: it stops before the members it uses go
};

}  // namespace fleetprof
