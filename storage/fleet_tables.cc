#include "storage/fleet_tables.h"

namespace fleetprof {

absl::StatusOr<std::vector<v1::Capture>> CaptureTable::List(const std::string& job, int limit) {
  std::vector<v1::Capture> captures;
  if (limit <= 0) return captures;
  CatalogScan newest_first;
  newest_first.reverse = true;
  absl::Status s = records_.ForEach(newest_first, [&](std::string_view, v1::Capture& capture) {
    if (job.empty() || capture.request().job() == job) captures.push_back(std::move(capture));
    return static_cast<int>(captures.size()) < limit;
  });
  if (!s.ok()) return s;
  return captures;
}

absl::StatusOr<int64_t> CaptureTable::DeleteBefore(int64_t created_before_ns) {
  CatalogWrite write;
  absl::Status s = catalog_->Scan(CatalogTable::kCaptures, CatalogScan(), [&](std::string_view key, std::string_view value) {
    v1::Capture capture;
    if (capture.ParseFromArray(value.data(), static_cast<int>(value.size())) &&
        capture.created_at_ns() >= created_before_ns) {
      return true;
    }
    write.Delete(CatalogTable::kCaptures, std::string(key));
    return true;
  });
  if (!s.ok()) return s;
  const auto n = static_cast<int64_t>(write.mutations.size());
  if (n == 0) return n;
  if (absl::Status committed = catalog_->Commit(write); !committed.ok()) return committed;
  return n;
}

absl::Status ScheduleTable::Delete(const std::string& schedule_id) {
  // A record that does not parse can still be deleted: that is the way out for it.
  auto found = records_.Find(schedule_id);
  if (!found.ok() && !absl::IsDataLoss(found.status())) return found.status();
  if (found.ok() && !found->has_value()) return absl::NotFoundError("schedule " + schedule_id + ": not found");
  return records_.Delete(schedule_id, /*sync=*/true);
}

}  // namespace fleetprof
