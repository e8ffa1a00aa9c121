#include "storage/fleet_tables.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

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
  // In batches: etcd takes at most 128 operations per transaction, and old captures need not
  // go all at once.
  constexpr size_t kBatch = 100;
  for (size_t from = 0; from < write.mutations.size(); from += kBatch) {
    CatalogWrite batch;
    const size_t to = std::min(write.mutations.size(), from + kBatch);
    batch.mutations.assign(write.mutations.begin() + static_cast<std::ptrdiff_t>(from),
                           write.mutations.begin() + static_cast<std::ptrdiff_t>(to));
    if (absl::Status committed = catalog_->Commit(batch); !committed.ok()) return committed;
  }
  return n;
}

absl::StatusOr<std::optional<std::pair<v1::Capture, std::string>>> CaptureTable::FindWithBytes(
    const std::string& capture_id) {
  auto value = catalog_->Get(CatalogTable::kCaptures, capture_id);
  if (!value.ok()) return value.status();
  if (!value->has_value()) return std::optional<std::pair<v1::Capture, std::string>>();
  v1::Capture capture;
  if (!capture.ParseFromString(**value)) {
    return absl::DataLossError(absl::StrCat("capture ", capture_id, ": stored record does not parse"));
  }
  return std::optional<std::pair<v1::Capture, std::string>>(std::make_pair(std::move(capture), **std::move(value)));
}

absl::Status CaptureTable::PutIfUnchanged(const v1::Capture& capture, const std::optional<std::string>& expected) {
  CatalogWrite write;
  if (expected) {
    write.RequireValue(CatalogTable::kCaptures, capture.capture_id(), *expected);
  } else {
    write.RequireAbsent(CatalogTable::kCaptures, capture.capture_id());
  }
  write.Put(CatalogTable::kCaptures, capture.capture_id(), capture.SerializeAsString());
  return catalog_->Commit(write);
}

absl::Status ScheduleTable::Delete(const std::string& schedule_id) {
  // A record that does not parse can still be deleted: that is the way out for it.
  auto found = records_.Find(schedule_id);
  if (!found.ok() && !absl::IsDataLoss(found.status())) return found.status();
  if (found.ok() && !found->has_value()) return absl::NotFoundError("schedule " + schedule_id + ": not found");
  return records_.Delete(schedule_id, /*sync=*/true);
}

}  // namespace fleetprof
