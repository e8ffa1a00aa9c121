#pragma once
// A job's ops view is the sum of its profiles' op and kernel tables. Summed anew at every call,
// a job of 10,000 profiles needs 10,000 summaries, more than the summary cache holds, so every
// dashboard refresh read them all again (6 s on a replica). A rollup keeps the last answer of
// each job request with the ids it summed: the next call lists the job's profiles (one index
// scan, which decides what exists) and, when every summed id is still listed, adds only the new
// ones. A profile deleted or aged out since makes it sum anew. Kept per process: each replica
// rolls up what it is asked, and nothing needs invalidating, since the listed ids decide.

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "compare/job_views.h"
#include "fleetprof/v1/query.pb.h"

namespace fleetprof {

class JobRollups {
 public:
  // Adds one profile's tables to a sum.
  using AddProfile = std::function<absl::Status(const std::string& profile_id, compare::JobOpsSum* sum)>;

  // At most `max_ids` profile ids kept over all rollups (the oldest rollups go first).
  explicit JobRollups(size_t max_ids) : max_ids_(max_ids) {}

  // The request's identity: job, labels in key order, time bounds.
  static std::string Key(const v1::JobRequest& request);

  // The ops view of `key` over exactly `ids` (the profiles listed now).
  absl::StatusOr<v1::JobOpsResponse> Sum(const std::string& key, const std::vector<std::string>& ids,
                                         const AddProfile& add);

 private:
  struct Rollup {
    std::string key;
    absl::flat_hash_set<std::string> ids;
    compare::JobOpsSum sum;
  };
  void Keep(std::shared_ptr<const Rollup> rollup);

  static constexpr size_t kMaxRollups = 256;  // requests remembered, however few ids each
  const size_t max_ids_;
  absl::Mutex mu_;
  std::list<std::shared_ptr<const Rollup>> rollups_ ABSL_GUARDED_BY(mu_);  // most recent first
  size_t ids_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace fleetprof
