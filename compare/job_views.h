#pragma once
// A job's profiles taken together: their ops and kernels added up (`fleetprof job-ops`), and
// each profile as one point of the job's series and rank comparison. Pure: the caller lists
// and fetches the profiles.

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"

#include "fleetprof/v1/compare.pb.h"
#include "fleetprof/v1/profile.pb.h"

namespace fleetprof::compare {

// Adds one profile's ops and kernels into a running sum; Finish sorts the rows.
class JobOpsSum {
 public:
  void Add(const v1::ProfileSummary& summary);
  // The sum so far, sorted; the sum goes on taking profiles.
  v1::JobOpsResponse Finish() const;

 private:
  v1::JobOpsResponse sum_;
  absl::flat_hash_map<std::string, int> op_index_;
  absl::flat_hash_map<std::string, int> kernel_index_;
};

// The point of one profile: steps, busy ratio and peak memory from its summary.
v1::JobProfilePoint JobPoint(const v1::ProfileInfo& info, const v1::ProfileSummary& summary);

// The median of the points' median step times that are > 0 (0 when none).
int64_t MedianStepNs(const std::vector<v1::JobProfilePoint>& points);

}  // namespace fleetprof::compare
