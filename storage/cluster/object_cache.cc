#include "storage/cluster/object_cache.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "rocksdb/db.h"
#include "rocksdb/options.h"
#include "spdlog/spdlog.h"

namespace fleetprof::cluster {
namespace {

// A cached value's key: the object's key, a NUL (never in an object key: they are unreserved
// characters and '/'), then what was read. All of one object's entries share the prefix
// key + NUL, so one range deletion drops them.
std::string Tagged(std::string_view key, char tag) {
  std::string out(key);
  out.push_back('\0');
  if (tag != 0) out.push_back(tag);
  return out;
}
std::string WholeKey(std::string_view key) { return Tagged(key, 'W'); }
std::string SizeKey(std::string_view key) { return Tagged(key, 'S'); }
std::string RangeKey(std::string_view key, const ByteRange& range) {
  return Tagged(key, 'R') + absl::StrCat(range.offset, ":", range.length);
}

rocksdb::Options CacheOptions(int64_t max_bytes) {
  rocksdb::Options options;
  options.create_if_missing = true;
  options.compaction_style = rocksdb::kCompactionStyleFIFO;
  options.compaction_options_fifo.max_table_files_size = static_cast<uint64_t>(max_bytes);
  options.compaction_options_fifo.allow_compaction = false;
  // Memtables count against the bound too: a sixteenth of it each, two at most.
  options.write_buffer_size = static_cast<size_t>(std::clamp<int64_t>(max_bytes / 16, 1 << 20, 64 << 20));
  options.max_write_buffer_number = 2;
  options.compression = rocksdb::kNoCompression;  // the values are zstd frames already
  options.max_open_files = -1;  // FIFO needs it; the files number about 16 (the bound over a memtable)
  options.keep_log_file_num = 2;
  options.max_log_file_size = 1 << 20;
  return options;
}

class CachedObjectClient : public ObjectClient, public ObjectCacheUsage {
 public:
  CachedObjectClient(std::unique_ptr<ObjectClient> inner, std::unique_ptr<rocksdb::DB> db, ObjectCacheOptions options)
      : inner_(std::move(inner)), db_(std::move(db)), options_(std::move(options)) {
    write_.disableWAL = true;  // a cache: after a crash it is colder, nothing more
  }

  std::string Describe() const override { return inner_->Describe(); }
  bool healthy() const override { return inner_->healthy(); }

  absl::Status Put(std::string_view key, std::string_view bytes) override {
    if (absl::Status s = inner_->Put(key, bytes); !s.ok()) return s;
    // What this replica just wrote (a summary) is what its next query reads.
    if (Cached(key)) Keep(WholeKey(key), bytes);
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> Get(std::string_view key, std::optional<ByteRange> range) override {
    if (!Cached(key)) return inner_->Get(key, range);
    const std::string cache_key = range ? RangeKey(key, *range) : WholeKey(key);
    if (std::optional<std::string> hit = Find(cache_key)) return *std::move(hit);
    auto read = inner_->Get(key, range);
    if (read.ok()) Keep(cache_key, *read);
    return read;
  }

  absl::StatusOr<int64_t> Size(std::string_view key) override {
    if (!Cached(key)) return inner_->Size(key);
    const std::string cache_key = SizeKey(key);
    if (std::optional<std::string> hit = Find(cache_key)) {
      int64_t size = 0;
      if (hit->size() == sizeof(size)) {
        std::memcpy(&size, hit->data(), sizeof(size));
        return size;
      }
    }
    auto size = inner_->Size(key);
    if (size.ok()) {
      const int64_t value = *size;
      Keep(cache_key, std::string_view(reinterpret_cast<const char*>(&value), sizeof(value)));
    }
    return size;
  }

  absl::Status Delete(std::string_view key) override {
    absl::Status s = inner_->Delete(key);
    if (Cached(key)) {
      const std::string from = Tagged(key, 0);  // key NUL: the first entry of this object
      std::string to(key);
      to.push_back('\1');  // past the last
      rocksdb::Status dropped = db_->DeleteRange(write_, db_->DefaultColumnFamily(), from, to);
      if (!dropped.ok()) spdlog::warn("object cache: could not drop {}: {}", std::string(key), dropped.ToString());
    }
    return s;
  }

  absl::Status List(std::string_view prefix, const ObjectVisitor& visit) override { return inner_->List(prefix, visit); }
  absl::StatusOr<std::unique_ptr<ObjectWriter>> NewWriter(std::string_view key) override {
    return inner_->NewWriter(key);
  }

  int64_t CacheBytes() const override {
    uint64_t files = 0, memtables = 0;
    db_->GetIntProperty(rocksdb::DB::Properties::kTotalSstFilesSize, &files);
    db_->GetIntProperty(rocksdb::DB::Properties::kCurSizeAllMemTables, &memtables);
    return static_cast<int64_t>(files + memtables);
  }

 private:
  bool Cached(std::string_view key) const {
    return std::any_of(options_.prefixes.begin(), options_.prefixes.end(),
                       [&](const std::string& p) { return key.starts_with(p); });
  }

  std::optional<std::string> Find(const std::string& cache_key) {
    std::string value;
    const bool hit = db_->Get(rocksdb::ReadOptions(), cache_key, &value).ok();
    if (options_.on_lookup) options_.on_lookup(hit);
    if (!hit) return std::nullopt;
    return value;
  }

  void Keep(const std::string& cache_key, std::string_view bytes) {
    // A value larger than a memtable would only push everything else out.
    if (static_cast<int64_t>(bytes.size()) > options_.max_bytes / 16) return;
    rocksdb::Status s = db_->Put(write_, cache_key, rocksdb::Slice(bytes.data(), bytes.size()));
    if (!s.ok()) spdlog::warn("object cache: could not keep a read: {}", s.ToString());
  }

  std::unique_ptr<ObjectClient> inner_;
  std::unique_ptr<rocksdb::DB> db_;
  const ObjectCacheOptions options_;
  rocksdb::WriteOptions write_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<ObjectClient>> NewCachedObjectClient(std::unique_ptr<ObjectClient> inner,
                                                                     const ObjectCacheOptions& options) {
  std::error_code ec;
  std::filesystem::create_directories(options.dir, ec);
  if (ec) return absl::UnavailableError(absl::StrCat("cannot create the object cache ", options.dir, ": ", ec.message()));
  const rocksdb::Options db_options = CacheOptions(options.max_bytes);
  rocksdb::DB* db = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(db_options, options.dir, &db);
  if (!s.ok()) {
    // Only a cache: one that does not open (damaged, another version's) starts over empty.
    spdlog::warn("object cache {} does not open ({}): starting it empty", options.dir, s.ToString());
    (void)rocksdb::DestroyDB(options.dir, db_options);
    s = rocksdb::DB::Open(db_options, options.dir, &db);
    if (!s.ok()) return absl::UnavailableError(absl::StrCat("cannot open the object cache ", options.dir, ": ", s.ToString()));
  }
  return std::unique_ptr<ObjectClient>(
      new CachedObjectClient(std::move(inner), std::unique_ptr<rocksdb::DB>(db), options));
}

}  // namespace fleetprof::cluster
