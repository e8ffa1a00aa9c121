#pragma once
// JSON forms of API records printed by the CLI (the summary sections have theirs in
// analysis/summary_json.h).

#include <string>

#include "fleetprof/v1/profile.pb.h"

namespace fleetprof::cli {

// {"profile_id","job","node","format","start_ns","end_ns","labels":{…},…}
std::string ProfileInfoJson(const v1::ProfileInfo& info);
// [{"sampled_at_ns","device","uuid","model","memory_used_bytes",…},…]
std::string DeviceSamplesJson(const google::protobuf::RepeatedPtrField<v1::DeviceSample>& samples);

}  // namespace fleetprof::cli
