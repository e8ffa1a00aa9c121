#pragma once
// A sum over a set of profiles kept with the ids it summed, so the next call over the same
// selection adds only the profiles listed since (server/query/job_rollups.h says why: a job of
// 10,000 profiles read every summary at every dashboard refresh). The caller lists the ids
// (one index scan, which decides what exists); when every kept id is still listed the new ones
// are added to a copy of the kept sum, otherwise (a profile deleted or out of range) it sums
// anew. Nothing needs invalidating, since the listed ids decide. Kept per process, the most
// recent first, at most `max_ids` ids over all sums and kMaxRollups sums.
//
// `Sum` is copyable, default-constructible, and has `Finish() const` giving the answer
// (compare::JobOpsSum for a job's ops view, flame::CallTreeSum for a merged call tree).

#include <cstddef>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace fleetprof {

template <typename SumT>
class Rollups {
 public:
  using Answer = decltype(std::declval<const SumT&>().Finish());
  // Adds one profile to a sum.
  using AddProfile = std::function<absl::Status(const std::string& profile_id, SumT* sum)>;

  explicit Rollups(size_t max_ids) : max_ids_(max_ids) {}

  // The sum of `key` over exactly `ids` (the profiles listed now). An error of `add` is the
  // answer, and nothing half summed is kept.
  absl::StatusOr<Answer> Sum(const std::string& key, const std::vector<std::string>& ids, const AddProfile& add) {
    std::shared_ptr<const Rollup> kept = Find(key);
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
    Answer answer = next->sum.Finish();
    Keep(std::move(next));
    return answer;
  }

 private:
  struct Rollup {
    std::string key;
    absl::flat_hash_set<std::string> ids;
    SumT sum;
  };

  std::shared_ptr<const Rollup> Find(const std::string& key) {
    absl::MutexLock lock(&mu_);
    for (const auto& r : rollups_) {
      if (r->key == key) return r;
    }
    return nullptr;
  }

  void Keep(std::shared_ptr<const Rollup> rollup) {
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

  static constexpr size_t kMaxRollups = 256;  // sums remembered, however few ids each
  const size_t max_ids_;
  absl::Mutex mu_;
  std::list<std::shared_ptr<const Rollup>> rollups_ ABSL_GUARDED_BY(mu_);  // most recent first
  size_t ids_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace fleetprof
