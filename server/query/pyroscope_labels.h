#pragma once
// What Pyroscope's query API (querier.v1) sees of fleetprof: its two profile types and each
// profile's labels (docs/http-api.md, Pyroscope query API).

#include <string_view>

#include "absl/status/statusor.h"
#include "fleetprof/v1/profile.pb.h"
#include "flame/flame_graph.h"
#include "server/query/label_selector.h"
#include "types/v1/types.pb.h"

namespace fleetprof {

// fleetprof:device_time:nanoseconds:device_time:nanoseconds (device time at each kernel under
// the stack that launched it) and fleetprof:host_self_time:nanoseconds:host_self_time:nanoseconds.
std::vector<types::v1::ProfileType> PyroscopeProfileTypes();

// The call tree value a profile type ID shows; INVALID_ARGUMENT naming the known IDs otherwise.
absl::StatusOr<flame::FlameValue> FlameValueOfProfileType(std::string_view id);

// service_name (the job), job, node, profile_id, rank (when the profile has one), and each
// profile label whose key is a label name; the built-in ones win a clash. Sorted by name.
LabelSet PyroscopeLabels(const v1::ProfileInfo& info);

}  // namespace fleetprof
