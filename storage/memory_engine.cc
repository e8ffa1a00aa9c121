#include "storage/memory_engine.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace fleetprof {
namespace {

using Table = std::map<std::string, std::string, std::less<>>;

class MemoryCatalog : public Catalog {
 public:
  absl::StatusOr<std::optional<std::string>> Get(CatalogTable table, std::string_view key) override {
    absl::MutexLock lock(&mu_);
    const Table& t = tables_[table];
    auto it = t.find(key);
    if (it == t.end()) return std::optional<std::string>();
    return std::optional<std::string>(it->second);
  }

  absl::Status Scan(CatalogTable table, const CatalogScan& scan, const CatalogVisitor& visit) override {
    // A copy of the matching range: the visitor may call back into the catalog.
    std::vector<std::pair<std::string, std::string>> rows;
    {
      absl::MutexLock lock(&mu_);
      const Table& t = tables_[table];
      for (auto it = t.lower_bound(scan.prefix); it != t.end() && it->first.starts_with(scan.prefix); ++it) {
        rows.emplace_back(it->first, it->second);
      }
    }
    if (scan.reverse) std::reverse(rows.begin(), rows.end());
    for (const auto& [key, value] : rows) {
      if (!scan.after.empty() && (scan.reverse ? key >= scan.after : key <= scan.after)) continue;
      if (!visit(key, value)) break;
    }
    return absl::OkStatus();
  }

  absl::Status Commit(const CatalogWrite& write) override {
    absl::MutexLock lock(&mu_);
    for (const auto& c : write.conditions) {
      const Table& t = tables_[c.table];
      auto it = t.find(c.key);
      const bool holds = it == t.end() ? !c.value.has_value() : (c.value.has_value() && *c.value == it->second);
      if (!holds) {
        return absl::AbortedError(absl::StrCat(CatalogTableName(c.table), " record ", c.key, " changed before the commit"));
      }
    }
    for (const auto& m : write.mutations) {
      if (m.value) {
        tables_[m.table][m.key] = *m.value;
      } else {
        tables_[m.table].erase(m.key);
      }
    }
    return absl::OkStatus();
  }

  int64_t Count(CatalogTable table) {
    absl::MutexLock lock(&mu_);
    return static_cast<int64_t>(tables_[table].size());
  }

 private:
  absl::Mutex mu_;
  std::map<CatalogTable, Table> tables_ ABSL_GUARDED_BY(mu_);
};

// Names to their blobs, shared by the store and its readers and writers.
struct BlobMaps {
  absl::Mutex mu;
  Table objects ABSL_GUARDED_BY(mu);
  std::map<std::string, std::map<int64_t, std::string>, std::less<>> parts ABSL_GUARDED_BY(mu);
  std::map<std::string, Table, std::less<>> segments ABSL_GUARDED_BY(mu);
};

class MemoryPartSource : public analysis::ByteSource {
 public:
  MemoryPartSource(std::string name, std::string bytes) : name_(std::move(name)), bytes_(std::move(bytes)) {}
  absl::StatusOr<size_t> Read(char* buf, size_t n) override {
    size_t take = std::min(n, bytes_.size() - pos_);
    std::memcpy(buf, bytes_.data() + pos_, take);
    pos_ += take;
    return take;
  }
  const std::string& name() const override { return name_; }

 private:
  std::string name_;
  std::string bytes_;
  size_t pos_ = 0;
};

// Blocks become visible at Finish, as one object would on object storage.
class MemorySegmentWriter : public SegmentWriter {
 public:
  MemorySegmentWriter(BlobMaps* maps, std::string_view name) : maps_(maps), name_(name) {}
  absl::Status Append(std::string_view block, std::string bytes) override {
    blocks_[std::string(block)] = std::move(bytes);
    return absl::OkStatus();
  }
  absl::Status Finish() override {
    absl::MutexLock lock(&maps_->mu);
    Table& segment = maps_->segments[name_];
    for (auto& [block, bytes] : blocks_) segment[block] = std::move(bytes);
    blocks_.clear();
    return absl::OkStatus();
  }

 private:
  BlobMaps* maps_;
  std::string name_;
  Table blocks_;
};

class MemorySegmentReader : public SegmentReader {
 public:
  MemorySegmentReader(BlobMaps* maps, std::string_view name) : maps_(maps), name_(name) {}
  absl::StatusOr<std::string> Read(std::string_view block) override {
    absl::MutexLock lock(&maps_->mu);
    auto segment = maps_->segments.find(name_);
    if (segment != maps_->segments.end()) {
      if (auto it = segment->second.find(block); it != segment->second.end()) return it->second;
    }
    return absl::NotFoundError(absl::StrCat("event block of profile ", name_, ": not found"));
  }

 private:
  BlobMaps* maps_;
  std::string name_;
};

class MemoryBlobStore : public BlobStore {
 public:
  absl::Status PutObject(std::string_view name, std::string_view bytes) override {
    absl::MutexLock lock(&maps_.mu);
    maps_.objects[std::string(name)] = std::string(bytes);
    return absl::OkStatus();
  }
  absl::StatusOr<std::string> GetObject(std::string_view name) override {
    absl::MutexLock lock(&maps_.mu);
    auto it = maps_.objects.find(name);
    if (it == maps_.objects.end()) return absl::NotFoundError(absl::StrCat("object ", std::string(name), ": not found"));
    return it->second;
  }
  absl::Status DeleteObject(std::string_view name) override {
    absl::MutexLock lock(&maps_.mu);
    if (auto it = maps_.objects.find(name); it != maps_.objects.end()) maps_.objects.erase(it);
    return absl::OkStatus();
  }
  absl::Status ListObjects(const BlobVisitor& visit) override { return Visit(NamesOf(&BlobMaps::objects), visit); }

  absl::Status PutPart(std::string_view name, int64_t offset, std::string_view bytes) override {
    absl::MutexLock lock(&maps_.mu);
    maps_.parts[std::string(name)][offset] = std::string(bytes);
    return absl::OkStatus();
  }
  std::unique_ptr<analysis::ByteSource> ReadParts(std::string_view name, int64_t length) override {
    std::string bytes;
    {
      absl::MutexLock lock(&maps_.mu);
      if (auto it = maps_.parts.find(name); it != maps_.parts.end()) {
        for (const auto& [offset, part] : it->second) bytes += part;
      }
    }
    if (static_cast<int64_t>(bytes.size()) > length) bytes.resize(static_cast<size_t>(std::max<int64_t>(length, 0)));
    return std::make_unique<MemoryPartSource>(std::string(name), std::move(bytes));
  }
  absl::Status DeleteParts(std::string_view name, Reclaim) override {
    absl::MutexLock lock(&maps_.mu);
    if (auto it = maps_.parts.find(name); it != maps_.parts.end()) maps_.parts.erase(it);
    return absl::OkStatus();
  }
  absl::Status ListParts(const BlobVisitor& visit) override { return Visit(NamesOf(&BlobMaps::parts), visit); }
  absl::Status FinishParts(std::string_view) override { return absl::OkStatus(); }
  absl::StatusOr<int64_t> KeepContiguousParts(std::string_view name) override {
    absl::MutexLock lock(&maps_.mu);
    int64_t length = 0;
    if (auto it = maps_.parts.find(name); it != maps_.parts.end()) {
      auto part = it->second.begin();
      for (; part != it->second.end() && part->first == length; ++part) length += static_cast<int64_t>(part->second.size());
      it->second.erase(part, it->second.end());
    }
    return length;
  }

  std::unique_ptr<SegmentWriter> NewSegment(std::string_view name) override {
    return std::make_unique<MemorySegmentWriter>(&maps_, name);
  }
  std::unique_ptr<SegmentReader> OpenSegment(std::string_view name) override {
    return std::make_unique<MemorySegmentReader>(&maps_, name);
  }
  absl::Status DeleteSegment(std::string_view name, Reclaim) override {
    absl::MutexLock lock(&maps_.mu);
    if (auto it = maps_.segments.find(name); it != maps_.segments.end()) maps_.segments.erase(it);
    return absl::OkStatus();
  }
  absl::Status ListSegments(const BlobVisitor& visit) override { return Visit(NamesOf(&BlobMaps::segments), visit); }

  int64_t CountBlocks() {
    absl::MutexLock lock(&maps_.mu);
    int64_t n = 0;
    for (const auto& [name, segment] : maps_.segments) n += static_cast<int64_t>(segment.size());
    return n;
  }

 private:
  template <typename Map>
  std::vector<std::string> NamesOf(Map BlobMaps::*member) {
    absl::MutexLock lock(&maps_.mu);
    std::vector<std::string> names;
    for (const auto& entry : maps_.*member) names.push_back(entry.first);
    return names;
  }
  static absl::Status Visit(const std::vector<std::string>& names, const BlobVisitor& visit) {
    for (const auto& name : names) {
      if (!visit(name)) break;
    }
    return absl::OkStatus();
  }

  BlobMaps maps_;
};

class MemoryEngine : public StorageEngine {
 public:
  Catalog& catalog() override { return catalog_; }
  BlobStore& blobs() override { return blobs_; }
  StoreHealth Health() const override { return StoreHealth(); }
  bool TryResume() override { return true; }
  absl::Status Flush() override { return absl::OkStatus(); }
  StorageUsage Usage() override {
    StorageUsage usage;
    usage.profiles = catalog_.Count(CatalogTable::kProfiles);
    return usage;
  }
  int64_t FolderBytes() const override { return 0; }
  int64_t CountEventBlocks() override { return blobs_.CountBlocks(); }

 private:
  MemoryCatalog catalog_;
  MemoryBlobStore blobs_;
};

}  // namespace

std::unique_ptr<StorageEngine> NewMemoryEngine() { return std::make_unique<MemoryEngine>(); }

}  // namespace fleetprof
