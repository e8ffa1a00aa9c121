// The blob store in the embedded engine's column families, in the layout every release wrote:
//   summaries  name                      -> object bytes
//   raw        name \0 be64(offset)      -> one part of an upload
//   events     name \0 block name        -> one block of a segment (no index: keys are the index)

#include <algorithm>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "rocksdb/db.h"
#include "rocksdb/write_batch.h"
#include "storage/rocks_internal.h"
#include "storage/store_keys.h"

namespace fleetprof::rocks {
namespace {

namespace keys = store_keys;

// Streams at most the first `length` bytes of an upload's parts back, in offset order.
class PartSource : public analysis::ByteSource {
 public:
  PartSource(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf, std::string_view name, int64_t length)
      : prefix_(keys::RawPrefix(name)), name_(name), left_(std::max<int64_t>(length, 0)) {
    it_.reset(db->NewIterator(rocksdb::ReadOptions(), cf));
    it_->Seek(prefix_);
  }

  absl::StatusOr<size_t> Read(char* buf, size_t n) override {
    while (pos_ >= chunk_.size()) {
      if (left_ == 0) return 0;
      if (!it_->Valid() || !it_->key().starts_with(prefix_)) {
        if (!it_->status().ok()) return ToStatus(it_->status(), "raw read");
        return 0;
      }
      chunk_ = it_->value().ToString();
      if (static_cast<int64_t>(chunk_.size()) > left_) chunk_.resize(static_cast<size_t>(left_));
      left_ -= static_cast<int64_t>(chunk_.size());
      pos_ = 0;
      it_->Next();
    }
    size_t take = std::min(n, chunk_.size() - pos_);
    std::memcpy(buf, chunk_.data() + pos_, take);
    pos_ += take;
    return take;
  }
  const std::string& name() const override { return name_; }

 private:
  std::unique_ptr<rocksdb::Iterator> it_;
  std::string prefix_;
  std::string name_;
  int64_t left_;
  std::string chunk_;
  size_t pos_ = 0;
};

// Blocks go out in write batches of about a MiB: one write per block would cost a WAL record
// each, and a larger batch is held twice (the batch, then the memtable) while a large upload's
// event store is built next to its summaries.
constexpr size_t kSegmentBatchBytes = 1 << 20;

class RocksSegmentWriter : public SegmentWriter {
 public:
  RocksSegmentWriter(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf, std::string_view name)
      : db_(db), cf_(cf), name_(name) {}

  absl::Status Append(std::string_view block, std::string bytes) override {
    batch_.Put(cf_, keys::SegmentKey(name_, block), bytes);
    return batch_.GetDataSize() >= kSegmentBatchBytes ? WriteBatch() : absl::OkStatus();
  }
  absl::Status Finish() override { return WriteBatch(); }

 private:
  absl::Status WriteBatch() {
    if (batch_.Count() == 0) return absl::OkStatus();
    absl::Status s = ToStatus(db_->Write(rocksdb::WriteOptions(), &batch_), "write event blocks");
    batch_.Clear();
    return s;
  }

  rocksdb::DB* db_;
  rocksdb::ColumnFamilyHandle* cf_;
  std::string name_;
  rocksdb::WriteBatch batch_;
};

class RocksSegmentReader : public SegmentReader {
 public:
  RocksSegmentReader(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf, std::string_view name)
      : db_(db), cf_(cf), name_(name) {}

  absl::StatusOr<std::string> Read(std::string_view block) override {
    std::string value;
    rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), cf_, keys::SegmentKey(name_, block), &value);
    if (!s.ok()) return ToStatus(s, absl::StrCat("event block of profile ", name_));
    return value;
  }

 private:
  rocksdb::DB* db_;
  rocksdb::ColumnFamilyHandle* cf_;
  std::string name_;
};

class RocksBlobStore : public BlobStore {
 public:
  RocksBlobStore(rocksdb::DB* db, const std::vector<rocksdb::ColumnFamilyHandle*>& handles)
      : db_(db), handles_(handles) {}

  absl::Status PutObject(std::string_view name, std::string_view bytes) override {
    return ToStatus(db_->Put(rocksdb::WriteOptions(), handles_[kSummaries], Slice(name), Slice(bytes)), "put object");
  }
  absl::StatusOr<std::string> GetObject(std::string_view name) override {
    std::string value;
    rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), handles_[kSummaries], Slice(name), &value);
    if (!s.ok()) return ToStatus(s, absl::StrCat("object ", std::string(name)));
    return value;
  }
  absl::Status DeleteObject(std::string_view name) override {
    return ToStatus(db_->Delete(rocksdb::WriteOptions(), handles_[kSummaries], Slice(name)), "delete object");
  }
  absl::Status ListObjects(const BlobVisitor& visit) override {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), handles_[kSummaries]));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      if (!visit(it->key().ToStringView())) break;
    }
    return ToStatus(it->status(), "list objects");
  }

  absl::Status PutPart(std::string_view name, int64_t offset, std::string_view bytes) override {
    // Not through the write-ahead log: that would copy every uploaded byte to disk a second time
    // and checksum it with Debian's RocksDB's portable (table-driven) CRC32C, a seventh of the
    // server's ingest CPU. Parts still in the memtable at a crash are lost; the catalog's
    // received_bytes is cut back to what survived at start (RepairUploads), FinishParts makes a
    // complete upload durable before its profile is committed.
    rocksdb::WriteOptions unlogged;
    unlogged.disableWAL = true;
    return ToStatus(db_->Put(unlogged, handles_[kRaw], keys::RawKey(name, offset), Slice(bytes)), "append upload bytes");
  }
  absl::Status FinishParts(std::string_view) override {
    rocksdb::FlushOptions wait;
    wait.wait = true;
    return ToStatus(db_->Flush(wait, handles_[kRaw]), "flush uploaded bytes");
  }
  absl::StatusOr<int64_t> KeepContiguousParts(std::string_view name) override {
    const std::string prefix = keys::RawPrefix(name);
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), handles_[kRaw]));
    int64_t length = 0;
    bool gap = false;
    for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
      if (keys::RawOffset(it->key().ToStringView(), prefix.size()) != length) {
        gap = true;
        break;
      }
      length += static_cast<int64_t>(it->value().size());
    }
    if (!it->status().ok()) return ToStatus(it->status(), "read uploaded bytes");
    if (gap) {
      std::string end = prefix;
      end.back() = '\1';
      rocksdb::Status s = db_->DeleteRange(rocksdb::WriteOptions(), handles_[kRaw], keys::RawKey(name, length), end);
      if (!s.ok()) return ToStatus(s, "drop uploaded bytes after a gap");
    }
    return length;
  }
  std::unique_ptr<analysis::ByteSource> ReadParts(std::string_view name, int64_t length) override {
    return std::make_unique<PartSource>(db_, handles_[kRaw], name, length);
  }
  absl::Status DeleteParts(std::string_view name, Reclaim reclaim) override {
    return DeletePrefix(kRaw, keys::RawPrefix(name), reclaim, "uploaded bytes");
  }
  absl::Status ListParts(const BlobVisitor& visit) override { return ListNames(kRaw, visit, "list uploads' bytes"); }

  std::unique_ptr<SegmentWriter> NewSegment(std::string_view name) override {
    return std::make_unique<RocksSegmentWriter>(db_, handles_[kEvents], name);
  }
  std::unique_ptr<SegmentReader> OpenSegment(std::string_view name) override {
    return std::make_unique<RocksSegmentReader>(db_, handles_[kEvents], name);
  }
  absl::Status DeleteSegment(std::string_view name, Reclaim reclaim) override {
    return DeletePrefix(kEvents, keys::SegmentPrefix(name), reclaim, "event store");
  }
  absl::Status ListSegments(const BlobVisitor& visit) override { return ListNames(kEvents, visit, "list event stores"); }

 private:
  static rocksdb::Slice Slice(std::string_view s) { return rocksdb::Slice(s.data(), s.size()); }

  // Every key under "name\0": a range tombstone hides them at once; compaction frees the disk.
  absl::Status DeletePrefix(Family family, const std::string& prefix, Reclaim reclaim, absl::string_view what) {
    std::string end = prefix;
    end.back() = '\1';  // just past every key with the "name\0" prefix
    rocksdb::WriteOptions options;
    options.sync = reclaim == Reclaim::kNow;
    if (absl::Status s = ToStatus(db_->DeleteRange(options, handles_[family], prefix, end), absl::StrCat("delete ", what));
        !s.ok() || reclaim == Reclaim::kLater) {
      return s;
    }
    rocksdb::Slice begin_slice(prefix), end_slice(end);
    return ToStatus(db_->CompactRange(rocksdb::CompactRangeOptions(), handles_[family], &begin_slice, &end_slice),
                    absl::StrCat("compact ", what));
  }

  // The distinct names before the \0 of a family's keys: one seek per name, not one step per key.
  absl::Status ListNames(Family family, const BlobVisitor& visit, absl::string_view what) {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), handles_[family]));
    it->SeekToFirst();
    while (it->Valid()) {
      std::string_view key = it->key().ToStringView();
      std::string name(key.substr(0, key.find('\0')));
      if (!visit(name)) break;
      std::string next = keys::SegmentPrefix(name);
      next.back() = '\1';
      it->Seek(next);
    }
    return ToStatus(it->status(), what);
  }

  rocksdb::DB* db_;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
};

}  // namespace

std::unique_ptr<BlobStore> NewBlobStore(rocksdb::DB* db, const std::vector<rocksdb::ColumnFamilyHandle*>& handles) {
  return std::make_unique<RocksBlobStore>(db, handles);
}

}  // namespace fleetprof::rocks
