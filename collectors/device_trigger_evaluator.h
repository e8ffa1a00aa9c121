#pragma once
// The agent's side of device triggers (`device_utilization < N% for D`, `device_memory > N% for
// D`): the server sends the set (agent.proto, DeviceTriggers) and this evaluator judges every
// NVML round of the metrics sampler against it, so a firing needs no round trip. Per trigger
// and device of the trigger's job (a device where a process of the job holds memory), it keeps
// since when the value has been past the bound, on the sampler's monotonic clock; once that
// lasts the trigger's window it fires (TriggerFiring, with the value and the window in words)
// and holds the trigger back for its cooldown (and a second more), on the same clock. A sample where the value is
// within the bound, or unknown, starts the window afresh. Thread-safe: the link's reader sets
// the triggers while the sampler observes.

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "collectors/nvml_collector.h"
#include "fleetprof/v1/agent.pb.h"

namespace fleetprof {

class DeviceTriggerEvaluator {
 public:
  static constexpr int kMaxTriggers = 1000;  // kept from one message; the rest are ignored (logged)

  // Replaces the triggers. A trigger kept (same id, job and condition) keeps its windows and
  // its hold.
  void SetTriggers(const v1::DeviceTriggers& triggers) ABSL_LOCKS_EXCLUDED(mu_);
  // Judges one round taken at `now_ns` (monotonic); returns the firings it makes.
  std::vector<v1::TriggerFiring> Observe(const NvmlSnapshot& round, int64_t now_ns) ABSL_LOCKS_EXCLUDED(mu_);
  size_t size() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct State {
    v1::DeviceTrigger trigger;
    std::map<unsigned int, int64_t> past_since;  // device index -> first sample past the bound
    int64_t held_until = 0;                      // no firing before (after one: its cooldown)
  };
  // Whether `trigger` fires on `device` at `now`; fills `firing` when it does.
  static bool Judge(State& state, const DeviceSample& device, int devices, int64_t now, v1::TriggerFiring* firing);

  mutable absl::Mutex mu_;
  std::map<std::string, State> states_ ABSL_GUARDED_BY(mu_);  // by trigger id
};

}  // namespace fleetprof
