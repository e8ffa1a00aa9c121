#include "client/json_format.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "analysis/summary_json.h"

namespace fleetprof::cli {
namespace {

using analysis::AppendJsonString;

std::string LabelsJson(const google::protobuf::Map<std::string, std::string>& labels) {
  std::string out = "{";
  std::map<std::string, std::string> sorted(labels.begin(), labels.end());
  bool first = true;
  for (const auto& [key, value] : sorted) {
    if (!first) out += ",";
    first = false;
    AppendJsonString(&out, key);
    out += ":";
    AppendJsonString(&out, value);
  }
  return out + "}";
}

void Field(std::string* out, const char* name, const std::string& value) {
  absl::StrAppend(out, ",\"", name, "\":");
  AppendJsonString(out, value);
}

}  // namespace

std::string ProfileInfoJson(const v1::ProfileInfo& p) {
  std::string out = "{\"profile_id\":";
  AppendJsonString(&out, p.profile_id());
  Field(&out, "job", p.job());
  Field(&out, "node", p.node());
  Field(&out, "format", p.format());
  absl::StrAppend(&out, ",\"start_ns\":", p.start_ns(), ",\"end_ns\":", p.end_ns(),
                  ",\"labels\":", LabelsJson(p.labels()));
  Field(&out, "file_name", p.file_name());
  absl::StrAppend(&out, ",\"size_bytes\":", p.size_bytes(), ",\"events\":", p.events(),
                  ",\"ingested_at_ns\":", p.ingested_at_ns(), "}");
  return out;
}

std::string DeviceSamplesJson(const google::protobuf::RepeatedPtrField<v1::DeviceSample>& samples) {
  std::string out = "[";
  for (int i = 0; i < samples.size(); ++i) {
    const auto& d = samples[i];
    if (i > 0) out += ",";
    absl::StrAppend(&out, "{\"sampled_at_ns\":", d.sampled_at_ns());
    Field(&out, "device", d.device());
    Field(&out, "uuid", d.uuid());
    Field(&out, "model", d.model());
    absl::StrAppend(&out, ",\"memory_used_bytes\":", d.memory_used_bytes(),
                    ",\"memory_total_bytes\":", d.memory_total_bytes());
    if (d.has_utilization()) absl::StrAppend(&out, ",\"utilization_ratio\":", d.utilization_ratio());
    out += "}";
  }
  return out + "]";
}

}  // namespace fleetprof::cli
