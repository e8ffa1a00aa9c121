#include "server/query/job_rollups.h"

#include <map>

#include "absl/strings/str_cat.h"

namespace fleetprof {

std::string JobRollups::Key(const v1::JobRequest& request) {
  // Protobuf maps have no order: the labels are sorted so one request has one key.
  std::map<std::string, std::string> labels(request.labels().begin(), request.labels().end());
  std::string key = absl::StrCat(request.job().size(), ":", request.job(), "|", request.since_ns(), "|",
                                 request.until_ns());
  for (const auto& [k, v] : labels) absl::StrAppend(&key, "|", k.size(), ":", k, "=", v.size(), ":", v);
  return key;
}

}  // namespace fleetprof
