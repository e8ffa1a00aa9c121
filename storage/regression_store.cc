#include "storage/regression_store.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "storage/store_keys.h"

namespace fleetprof {
namespace {

namespace keys = store_keys;

std::string PointPrefix(const std::string& job) { return "h/" + job + '\0'; }
std::string RecordPrefix(const std::string& job) { return "r/" + job + '\0'; }
constexpr std::string_view kAllRecords = "r/";

// Visits the parsed records under `prefix`, newest first; one that does not parse is reported.
template <typename Message>
absl::Status ScanParsed(Catalog* catalog, UnreadableLog* unreadable, const char* kind, const std::string& prefix,
                        int64_t expected, const std::function<bool(Message&)>& visit) {
  CatalogScan scan;
  scan.prefix = prefix;
  scan.expected_keys = expected;
  return catalog->Scan(CatalogTable::kIndex, scan, [&](std::string_view key, std::string_view value) {
    Message message;
    if (!message.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
      unreadable->Report(kind, key);
      return true;
    }
    return visit(message);
  });
}

}  // namespace

absl::StatusOr<std::vector<v1::RegressionPoint>> RegressionStore::RecentPoints(const std::string& job, int limit) {
  std::vector<v1::RegressionPoint> points;
  if (limit <= 0) return points;
  absl::Status s = ScanParsed<v1::RegressionPoint>(catalog_, unreadable_, "regression point", PointPrefix(job), limit,
                                                   [&](v1::RegressionPoint& p) {
                                                     points.push_back(std::move(p));
                                                     return static_cast<int>(points.size()) < limit;
                                                   });
  if (!s.ok()) return s;
  return points;
}

absl::Status RegressionStore::Add(const std::string& job, const v1::RegressionPoint& point,
                                  const std::vector<v1::Regression>& found) {
  CatalogWrite write;
  write.sync = true;  // a record survives a crash, as the profile it names does
  write.Put(CatalogTable::kIndex,
            absl::StrCat(PointPrefix(job), keys::InvertedTime(point.ingested_at_ns()), point.profile_id()),
            point.SerializeAsString());
  for (const v1::Regression& r : found) {
    write.Put(CatalogTable::kIndex, absl::StrCat(RecordPrefix(job), keys::InvertedTime(r.detected_ns()), r.regression_id()),
              r.SerializeAsString());
  }
  if (absl::Status s = catalog_->Commit(write); !s.ok()) return s;
  if (absl::Status s = Trim(PointPrefix(job), kMaxPointsPerJob); !s.ok()) return s;
  return found.empty() ? absl::OkStatus() : Trim(RecordPrefix(job), kMaxRecordsPerJob);
}

absl::Status RegressionStore::Trim(const std::string& prefix, int keep) {
  CatalogScan scan;
  scan.prefix = prefix;
  int seen = 0;
  CatalogWrite write;
  absl::Status s = catalog_->Scan(CatalogTable::kIndex, scan, [&](std::string_view key, std::string_view) {
    if (++seen > keep) write.Delete(CatalogTable::kIndex, std::string(key));
    return true;
  });
  if (!s.ok() || write.mutations.empty()) return s;
  return catalog_->Commit(write);
}

absl::StatusOr<std::vector<v1::Regression>> RegressionStore::List(const std::string& job) {
  std::vector<v1::Regression> out;
  absl::Status s = ScanParsed<v1::Regression>(catalog_, unreadable_, "regression",
                                              job.empty() ? std::string(kAllRecords) : RecordPrefix(job), 0,
                                              [&](v1::Regression& r) {
                                                out.push_back(std::move(r));
                                                return true;
                                              });
  if (!s.ok()) return s;
  std::stable_sort(out.begin(), out.end(), [](const v1::Regression& a, const v1::Regression& b) {
    if (a.detected_ns() != b.detected_ns()) return a.detected_ns() > b.detected_ns();
    return a.regression_id() < b.regression_id();
  });
  return out;
}

absl::StatusOr<std::vector<v1::Regression>> RegressionStore::ForProfile(const std::string& job,
                                                                        const std::string& profile_id) {
  absl::StatusOr<std::vector<v1::Regression>> all = List(job);
  if (!all.ok()) return all.status();
  std::vector<v1::Regression> out;
  for (v1::Regression& r : *all) {
    if (r.profile_id() == profile_id) out.push_back(std::move(r));
  }
  std::sort(out.begin(), out.end(), [](const v1::Regression& a, const v1::Regression& b) {
    return a.regression_id() < b.regression_id();
  });
  return out;
}

}  // namespace fleetprof
