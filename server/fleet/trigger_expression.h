#pragma once
// The `when` of a trigger (`fleetprof trigger add --when EXPR`), parsed into the fields of
// v1::Trigger that say what fires it. The grammar, all of it:
//   device_utilization < N% for D     (or >; N in 0..100)
//   device_memory > N% for D          (or <; percent of the device's memory in use)
//   rule NAME                         (a diagnosis rule, on each new profile of the job)
//   regression                        (the regression detector made a record for the job)
// D is a duration: 500ms, 5s, 1.5s, 2m, 1h (at most 24h). Pure: no clock, no I/O.

#include <cstdint>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/statusor.h"
#include "fleetprof/v1/trigger.pb.h"

namespace fleetprof {

// The grammar as errors show it.
inline constexpr char kTriggerGrammar[] =
    "`device_utilization < N% for D`, `device_memory > N% for D` (either metric, < or >, N in 0..100, D like "
    "500ms, 5s, 2m, 1h), `rule NAME` or `regression`";
inline constexpr int64_t kMaxTriggerWindowMs = int64_t{24} * 3600 * 1000;

// What `when` fires on: exactly one of the three set.
struct TriggerCondition {
  v1::DeviceCondition device;  // metric != METRIC_UNSPECIFIED for a device condition
  std::string rule;
  bool regression = false;
};

// INVALID_ARGUMENT showing the grammar for anything else; a rule that is not one of
// `known_rules` is refused with the list of them.
absl::StatusOr<TriggerCondition> ParseTriggerCondition(absl::string_view when,
                                                       const std::vector<std::string>& known_rules);

// "500ms", "5s", "1.5s", "2m", "1h", "7d" in milliseconds (a whole number of them, > 0);
// INVALID_ARGUMENT otherwise.
absl::StatusOr<int64_t> ParseTriggerDurationMs(absl::string_view text);

// The kind a firing is counted under: device_utilization, device_memory, rule or regression.
std::string TriggerKind(const v1::Trigger& trigger);

}  // namespace fleetprof
