#include "storage/upload_table.h"

#include <vector>

namespace fleetprof {

absl::Status UploadTable::AppendRaw(const std::string& upload_id, v1::UploadRecord& record, std::string_view bytes) {
  if (absl::Status s = blobs_->PutPart(upload_id, record.received_bytes(), bytes); !s.ok()) return s;
  record.set_received_bytes(record.received_bytes() + static_cast<int64_t>(bytes.size()));
  return records_.Put(upload_id, record);
}

absl::Status UploadTable::Abort(const std::string& upload_id) {
  if (absl::Status s = records_.Delete(upload_id); !s.ok()) return s;
  return blobs_->DeleteParts(upload_id, Reclaim::kLater);
}

absl::StatusOr<int> UploadTable::CleanStale(int64_t older_than_ns) {
  std::vector<std::string> stale;
  absl::Status s = records_.ForEach(CatalogScan(), [&](std::string_view key, v1::UploadRecord& record) {
    if (record.profile_id().empty() && record.updated_at_ns() < older_than_ns) stale.emplace_back(key);
    return true;
  });
  if (!s.ok()) return s;
  for (const auto& id : stale) {
    if (absl::Status aborted = Abort(id); !aborted.ok()) return aborted;
  }
  return static_cast<int>(stale.size());
}

absl::StatusOr<int> UploadTable::RepairPartial() {
  std::vector<std::pair<std::string, v1::UploadRecord>> partial;
  absl::Status s = records_.ForEach(CatalogScan(), [&](std::string_view key, v1::UploadRecord& record) {
    if (record.profile_id().empty() && record.received_bytes() > 0) partial.emplace_back(key, std::move(record));
    return true;
  });
  if (!s.ok()) return s;
  int repaired = 0;
  for (auto& [id, record] : partial) {
    auto stored = blobs_->KeepContiguousParts(id);
    if (!stored.ok()) return stored.status();
    if (*stored >= record.received_bytes()) continue;
    record.set_received_bytes(*stored);
    if (absl::Status put = records_.Put(id, record); !put.ok()) return put;
    ++repaired;
  }
  return repaired;
}

}  // namespace fleetprof
