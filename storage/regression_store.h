#pragma once
// What the regression detector keeps (server/ingest/regression_detector.h), in the catalog's index
// table under prefixes of their own, beside the profile indexes ("t/", "j/", "l/"):
//   "h/" job \0 inv_time(ingested_at_ns) profile_id  -> RegressionPoint  (the job's last profiles)
//   "r/" job \0 inv_time(detected_ns) regression_id  -> Regression       (the job's records)
// Both are bounded per job: a write trims what falls past the bound, oldest first.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "fleetprof/v1/regression.pb.h"
#include "storage/catalog.h"
#include "storage/record_table.h"

namespace fleetprof {

class RegressionStore {
 public:
  static constexpr int kMaxPointsPerJob = 20;    // the baseline's profiles
  static constexpr int kMaxRecordsPerJob = 200;  // regression records kept per job

  RegressionStore(Catalog* catalog, UnreadableLog* unreadable) : catalog_(catalog), unreadable_(unreadable) {}

  // The job's kept points, newest first, at most `limit`.
  absl::StatusOr<std::vector<v1::RegressionPoint>> RecentPoints(const std::string& job, int limit);
  // Keeps `point` as the job's newest and `found` (its records) in one write, then trims the
  // job's points and records to their bounds.
  absl::Status Add(const std::string& job, const v1::RegressionPoint& point, const std::vector<v1::Regression>& found);
  // Records of `job` (every job when empty), newest first (detected_ns, then regression_id).
  absl::StatusOr<std::vector<v1::Regression>> List(const std::string& job);
  // The records of one profile of `job`, in the order they were made.
  absl::StatusOr<std::vector<v1::Regression>> ForProfile(const std::string& job, const std::string& profile_id);

 private:
  // Deletes the keys of `prefix` past the first `keep` (newest first).
  absl::Status Trim(const std::string& prefix, int keep);

  Catalog* catalog_;
  UnreadableLog* unreadable_;
};

}  // namespace fleetprof
