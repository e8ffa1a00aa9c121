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

}  // namespace fleetprof
