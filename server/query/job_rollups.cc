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

absl::StatusOr<v1::JobOpsResponse> JobRollups::Sum(const std::string& key, const std::vector<std::string>& ids,
                                                   const AddProfile& add) {
  std::shared_ptr<const Rollup> kept;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& r : rollups_) {
      if (r->key == key) {
        kept = r;
        break;
      }
    }
  }
  // What is new since the kept sum; any summed id no longer listed means summing anew.
  std::vector<const std::string*> added;
  if (kept) {
    size_t still_listed = 0;
    for (const std::string& id : ids) {
      if (kept->ids.contains(id)) {
        ++still_listed;
      } else {
        added.push_back(&id);
      }
    }
    if (still_listed != kept->ids.size()) kept.reset();
  }
  if (kept && added.empty()) return kept->sum.Finish();
  auto next = std::make_shared<Rollup>();
  next->key = key;
  if (kept) {
    next->sum = kept->sum;
    next->ids = kept->ids;
  } else {
    added.clear();
    for (const std::string& id : ids) added.push_back(&id);
  }
  for (const std::string* id : added) {
    if (absl::Status s = add(*id, &next->sum); !s.ok()) return s;
    next->ids.insert(*id);
  }
  v1::JobOpsResponse answer = next->sum.Finish();
  Keep(std::move(next));
  return answer;
}

void JobRollups::Keep(std::shared_ptr<const Rollup> rollup) {
  absl::MutexLock lock(&mu_);
  for (auto it = rollups_.begin(); it != rollups_.end(); ++it) {
    if ((*it)->key == rollup->key) {
      ids_ -= (*it)->ids.size();
      rollups_.erase(it);
      break;
    }
  }
  ids_ += rollup->ids.size();
  rollups_.push_front(std::move(rollup));
  while ((ids_ > max_ids_ || rollups_.size() > kMaxRollups) && rollups_.size() > 1) {
    ids_ -= rollups_.back()->ids.size();
    rollups_.pop_back();
  }
}

}  // namespace fleetprof
