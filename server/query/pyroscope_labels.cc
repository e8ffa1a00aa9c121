#include "server/query/pyroscope_labels.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace fleetprof {
namespace {

struct TypeRow {
  const char* id;
  const char* sample_type;
  flame::FlameValue value;
};
constexpr TypeRow kTypes[] = {
    {"fleetprof:device_time:nanoseconds:device_time:nanoseconds", "device_time", flame::FlameValue::kDeviceNs},
    {"fleetprof:host_self_time:nanoseconds:host_self_time:nanoseconds", "host_self_time",
     flame::FlameValue::kHostSelfNs},
};

constexpr const char* kBuiltIn[] = {"job", "node", "profile_id", "rank", "service_name"};

}  // namespace

std::vector<types::v1::ProfileType> PyroscopeProfileTypes() {
  std::vector<types::v1::ProfileType> types;
  for (const TypeRow& row : kTypes) {
    types::v1::ProfileType& t = types.emplace_back();
    t.set_id(row.id);
    t.set_name("fleetprof");
    t.set_sample_type(row.sample_type);
    t.set_sample_unit("nanoseconds");
    t.set_period_type(row.sample_type);
    t.set_period_unit("nanoseconds");
  }
  return types;
}

absl::StatusOr<flame::FlameValue> FlameValueOfProfileType(std::string_view id) {
  std::vector<std::string> known;
  for (const TypeRow& row : kTypes) {
    if (id == row.id) return row.value;
    known.push_back(row.id);
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown profile type '", std::string(id),
                                                 "': fleetprof has ", absl::StrJoin(known, " and ")));
}

LabelSet PyroscopeLabels(const v1::ProfileInfo& info) {
  LabelSet labels = {{"job", info.job()}, {"node", info.node()}, {"profile_id", info.profile_id()},
                     {"service_name", info.job()}};
  if (auto rank = info.labels().find("rank"); rank != info.labels().end()) labels.emplace_back("rank", rank->second);
  for (const auto& [key, value] : info.labels()) {
    if (!IsLabelName(key) || std::find(std::begin(kBuiltIn), std::end(kBuiltIn), key) != std::end(kBuiltIn)) continue;
    labels.emplace_back(key, value);
  }
  std::sort(labels.begin(), labels.end());
  return labels;
}

}  // namespace fleetprof
