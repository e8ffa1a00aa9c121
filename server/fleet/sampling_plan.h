#pragma once
// SamplingPlan: the sampling policy's arithmetic, with no thread, clock, store or network of its
// own, so that a week of a 10,000-target fleet is planned in a test in milliseconds.
//
// The design (Poisson sampling with a carried queue):
// - Each period every live target of a matching job is drawn independently with the same
//   probability p = min(1, kBudgetShare x max_overhead x period / duration): every target, hence
//   every device-hour, has the same known inclusion probability. The expected captured
//   device-time, p x duration x (the fleet's devices), is then kBudgetShare of the budget
//   (max_overhead x period x the fleet's devices), whatever the mix of devices per target.
// - A drawn pick stands for weight_device_ns = devices x period / p of the fleet's device-time.
// - Picks start while the period's spend stays within its budget and fewer than max_concurrent
//   sampled captures are in flight; a pick that does not fit waits in a queue and starts in a
//   later period, charged to that one. Every drawn pick still runs exactly once, so each
//   (target, period) is in the sample with probability p and the Horvitz-Thompson sum stays
//   unbiased (a waiting pick profiles its target a little later: the estimator assumes a
//   target's mix does not change within a period or two). Since the expected spend is half the
//   budget the queue stays short; it is bounded (kMaxPending, oldest dropped and counted).
// - A pick whose target is busy with another capture when it is due is skipped and counted
//   (skipped_busy): two captures of one target never run at once. A pick whose target is gone
//   is dropped (its device-time left the fleet with it).

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "fleetprof/v1/sampling.pb.h"

namespace fleetprof {

// A live target as the sampler sees it: where it runs, its job and how many devices it uses.
struct SampledTarget {
  std::string node;
  std::string target;  // TargetName
  std::string job;
  std::map<std::string, std::string> labels;  // the job's labels
  int32_t devices = 1;
  bool busy = false;  // a capture of it is running now
};

// What a period's draw and a dispatch produced.
struct PlanStep {
  std::vector<v1::SamplingPick> start;  // to start now, in this order
  int64_t skipped_busy = 0;
  int64_t dropped = 0;  // gone targets, or queue overflow
};

class SamplingPlan {
 public:
  static constexpr double kBudgetShare = 0.5;
  static constexpr int kMaxPending = 10'000;
  static constexpr int32_t kDefaultMaxConcurrent = 16;
  static constexpr int32_t kMaxDevicesPerTarget = 1024;  // an agent's count is untrusted

  // The inclusion probability every target has in each period under `policy`.
  static double InclusionProbability(const v1::SetSamplingRequest& policy);
  // The fleet's device-time in one period: sum of devices x period, over matching targets.
  static int64_t FleetDeviceNs(const v1::SetSamplingRequest& policy, const std::vector<SampledTarget>& targets);
  // Whether `target`'s job labels match every pair of the policy's.
  static bool Matches(const v1::SetSamplingRequest& policy, const SampledTarget& target);
  // The device-time one capture of `devices` costs.
  static int64_t CostDeviceNs(const v1::SetSamplingRequest& policy, int32_t devices);

  // Starts a new period at `period_start_ns` in `state`: records the last period's spend, draws
  // this period's picks among the matching `targets` (sorted by node and target, so the same
  // seed and fleet give the same draw on any replica), appends them to state.pending and moves
  // the seed on. Counts state.periods.
  static void BeginPeriod(v1::SamplingState* state, const std::vector<SampledTarget>& targets,
                          int64_t period_start_ns);

  // Takes from state.pending the picks that may start now: their targets live and not busy
  // (else skipped and counted), within the current period's budget (the fleet device-time of
  // the live matching targets x max_overhead, less what the period spent), and while fewer
  // than max_concurrent sampled captures run (`in_flight` now). Charges them to the period's
  // spend and counts state.captures. The rest stay queued, oldest first.
  static PlanStep Dispatch(v1::SamplingState* state, const std::vector<SampledTarget>& targets, int in_flight);

  // captured / fleet device-time over the periods that started in the hour before `now_ns`.
  static double OverheadLastHour(const v1::SamplingState& state, int64_t now_ns);
};

}  // namespace fleetprof
