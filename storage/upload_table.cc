#include "storage/upload_table.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace fleetprof {
namespace {

// How many bytes `source` reads to its end.
absl::StatusOr<int64_t> CountBytes(analysis::ByteSource& source) {
  std::string buffer(256 << 10, '\0');
  int64_t total = 0;
  for (;;) {
    absl::StatusOr<size_t> got = source.Read(buffer.data(), buffer.size());
    if (!got.ok()) return got.status();
    if (*got == 0) return total;
    total += static_cast<int64_t>(*got);
  }
}

// A source whose every read fails with `error`: the original of an upload whose record could
// not be read is that error, never the parts read one way or the other by guess.
class FailedSource : public analysis::ByteSource {
 public:
  FailedSource(std::string name, absl::Status error) : name_(std::move(name)), error_(std::move(error)) {}
  absl::StatusOr<size_t> Read(char*, size_t) override { return error_; }
  const std::string& name() const override { return name_; }

 private:
  std::string name_;
  absl::Status error_;
};

// The first `length` bytes of `inner`, which must hold at least that many: content that ends
// short is DATA_LOSS (stored members and their record that disagree), never a shorter file.
class ExactLengthSource : public analysis::ByteSource {
 public:
  ExactLengthSource(std::unique_ptr<analysis::ByteSource> inner, int64_t length)
      : inner_(std::move(inner)), left_(std::max<int64_t>(length, 0)) {}
  absl::StatusOr<size_t> Read(char* buf, size_t n) override {
    if (left_ == 0) return 0;
    absl::StatusOr<size_t> got = inner_->Read(buf, static_cast<size_t>(std::min<int64_t>(left_, static_cast<int64_t>(n))));
    if (!got.ok()) return got.status();
    if (*got == 0) {
      return absl::DataLossError(absl::StrCat(inner_->name(), ": the stored bytes end ", left_,
                                              " bytes before the length the upload's record counts"));
    }
    left_ -= static_cast<int64_t>(*got);
    return got;
  }
  const std::string& name() const override { return inner_->name(); }

 private:
  std::unique_ptr<analysis::ByteSource> inner_;
  int64_t left_;
};

}  // namespace

absl::Status UploadTable::AppendRaw(const std::string& upload_id, v1::UploadRecord& record, std::string_view stored,
                                    int64_t file_bytes) {
  if (absl::Status s = blobs_->PutPart(upload_id, StoredBytes(record), stored); !s.ok()) return s;
  if (!record.parts_encoding().empty()) record.set_stored_bytes(record.stored_bytes() + static_cast<int64_t>(stored.size()));
  record.set_received_bytes(record.received_bytes() + file_bytes);
  return records_.Put(upload_id, record);
}

std::unique_ptr<analysis::ByteSource> UploadTable::ReadRaw(const std::string& upload_id,
                                                           const v1::UploadRecord& record) {
  if (record.parts_encoding().empty()) return blobs_->ReadParts(upload_id, record.received_bytes());
  // Gzip members in a row read as one .gz file: its content is the file.
  return std::make_unique<ExactLengthSource>(analysis::MaybeGunzip(blobs_->ReadParts(upload_id, record.stored_bytes())),
                                             record.received_bytes());
}

std::unique_ptr<analysis::ByteSource> UploadTable::ReadOriginal(const std::string& upload_id, int64_t size_bytes) {
  auto record = Get(upload_id);
  if (!record.ok()) return std::make_unique<FailedSource>(upload_id, record.status());
  // A committed profile's upload keeps its record until the profile is deleted with it.
  if (!record->has_value()) {
    return std::make_unique<FailedSource>(upload_id, absl::NotFoundError(absl::StrCat("upload ", upload_id, " is gone")));
  }
  v1::UploadRecord known = **std::move(record);
  if (known.received_bytes() > size_bytes) known.set_received_bytes(size_bytes);  // never past the profile
  return ReadRaw(upload_id, known);
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
    if (*stored >= StoredBytes(record)) continue;
    if (record.parts_encoding().empty()) {
      record.set_received_bytes(*stored);
    } else {
      // Whole members survived (a part is written at once): the file's bytes are what they hold.
      record.set_stored_bytes(*stored);
      auto file_bytes = CountBytes(*analysis::MaybeGunzip(blobs_->ReadParts(id, *stored)));
      if (absl::IsDataLoss(file_bytes.status())) {
        // Damaged: the client starts again from the first byte, on no part of the old bytes.
        if (absl::Status dropped = blobs_->DeleteParts(id, Reclaim::kLater); !dropped.ok()) return dropped;
        record.set_stored_bytes(0);
        file_bytes = 0;
      }
      if (!file_bytes.ok()) return file_bytes.status();  // the store or a thread: the next start tries again
      record.set_received_bytes(*file_bytes);
    }
    if (absl::Status put = records_.Put(id, record); !put.ok()) return put;
    ++repaired;
  }
  return repaired;
}

}  // namespace fleetprof
