#pragma once
// Uploads: the catalog's record of each (metadata, bytes received, owner, the profile it made)
// and its original bytes as parts in the blob store. The record is the truth: bytes past its
// received_bytes (a crash between the part and the record) are never read and are replaced
// when the upload resumes.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "analysis/byte_source.h"
#include "fleetprof/v1/records.pb.h"
#include "storage/blob_store.h"
#include "storage/record_table.h"

namespace fleetprof {

class UploadTable {
 public:
  UploadTable(Catalog* catalog, BlobStore* blobs, UnreadableLog* unreadable)
      : records_(catalog, CatalogTable::kUploads, "upload", unreadable), blobs_(blobs) {}

  // The record of `upload_id`, or nullopt if none is stored.
  absl::StatusOr<std::optional<v1::UploadRecord>> Get(const std::string& upload_id) { return records_.Find(upload_id); }
  // Stores the record of a new or resumed upload.
  absl::Status Put(const std::string& upload_id, const v1::UploadRecord& record) {
    return records_.Put(upload_id, record);
  }
  // Stores the file's next `file_bytes` bytes, kept as `stored` (those bytes themselves, or one
  // gzip member of them when record.parts_encoding() is "gzip"), after the parts stored so far;
  // then advances the record's counts and writes it.
  absl::Status AppendRaw(const std::string& upload_id, v1::UploadRecord& record, std::string_view stored,
                         int64_t file_bytes);
  // Streams the file's first record.received_bytes() bytes as they were uploaded, whatever the
  // parts' encoding.
  std::unique_ptr<analysis::ByteSource> ReadRaw(const std::string& upload_id, const v1::UploadRecord& record);
  // The original file of a committed profile (its upload's key and size_bytes), byte for byte;
  // NOT_FOUND once the upload is gone.
  std::unique_ptr<analysis::ByteSource> ReadOriginal(const std::string& upload_id, int64_t size_bytes);
  // Deletes an uncommitted upload's record and bytes (the record first: bytes without a record
  // are orphans that Storage::CollectOrphans removes).
  absl::Status Abort(const std::string& upload_id);
  // Aborts partial uploads not touched since `older_than_ns` (unix ns). Returns how many.
  absl::StatusOr<int> CleanStale(int64_t older_than_ns);
  // At start, before serving: a partial upload whose latest parts a crash lost (they are written
  // without a log, blob_store.h) counts only the bytes that survived, so its client resumes from
  // there. Returns how many records were cut back.
  absl::StatusOr<int> RepairPartial();

  RecordTable<v1::UploadRecord>& records() { return records_; }

  static constexpr std::string_view kGzipParts = "gzip";
  // Where the next part goes: the bytes the parts hold so far.
  static int64_t StoredBytes(const v1::UploadRecord& record) {
    return record.parts_encoding().empty() ? record.received_bytes() : record.stored_bytes();
  }

 private:
  RecordTable<v1::UploadRecord> records_;
  BlobStore* blobs_;
};

}  // namespace fleetprof
