#include "storage/cluster/object_cache.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <optional>
#include <filesystem>

#include <sys/statvfs.h>
#include <cerrno>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "rocksdb/db.h"
#include "rocksdb/env.h"
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

// RocksDB's own log, into ours at warning and above: its LOG file would be one more file on
// the cache's disk, and a write to it after the disk filled aborts the process (a debug
// assertion Debian's build keeps), at the latest when the database closes.
class CacheLogger final : public rocksdb::Logger {
 public:
  CacheLogger() : rocksdb::Logger(rocksdb::InfoLogLevel::WARN_LEVEL) {}
  using rocksdb::Logger::Logv;
  void Logv(const char* format, va_list ap) override {
    char line[512];
    std::vsnprintf(line, sizeof(line), format, ap);
    spdlog::warn("object cache (rocksdb): {}", line);
  }
};

rocksdb::Options CacheOptions(int64_t max_bytes) {
  rocksdb::Options options;
  options.info_log = std::make_shared<CacheLogger>();
  options.create_if_missing = true;
  options.compaction_style = rocksdb::kCompactionStyleFIFO;
  options.compaction_options_fifo.max_table_files_size = static_cast<uint64_t>(max_bytes);
  options.compaction_options_fifo.allow_compaction = false;
  // Memtables count against the bound too: a sixteenth of it each, two at most.
  options.write_buffer_size = static_cast<size_t>(std::clamp<int64_t>(max_bytes / 16, 1 << 20, 64 << 20));
  options.max_write_buffer_number = 2;
  options.compression = rocksdb::kNoCompression;  // the values are zstd frames already
  options.max_open_files = -1;  // FIFO needs it; the files number about 16 (the bound over a memtable)
  // With no write-ahead log, closing flushes the memtables, and a flush on a full disk may
  // abort: the destructor flushes only when there is room (a warm cache for the restart).
  options.avoid_flush_during_shutdown = true;
  options.keep_log_file_num = 2;
  options.max_log_file_size = 1 << 20;
  return options;
}

// The cache's RocksDB while it works. Shared, so that a read in progress keeps the database
// open while another thread puts it aside.
using CacheDb = std::shared_ptr<rocksdb::DB>;

absl::StatusOr<int64_t> StatvfsFreeBytes(const std::string& dir) {
  struct statvfs fs;
  if (statvfs(dir.c_str(), &fs) != 0) return absl::UnavailableError(absl::StrCat("statvfs ", dir, ": ", std::strerror(errno)));
  return static_cast<int64_t>(fs.f_bavail) * static_cast<int64_t>(fs.f_frsize);
}

class CachedObjectClient : public ObjectClient, public ObjectCacheUsage {
 public:
  CachedObjectClient(std::unique_ptr<ObjectClient> inner, ObjectCacheOptions options)
      : inner_(std::move(inner)), options_(std::move(options)), db_options_(CacheOptions(options_.max_bytes)),
        clock_(options_.clock != nullptr ? options_.clock : RealClock()) {
    if (!options_.free_bytes) options_.free_bytes = StatvfsFreeBytes;
    write_.disableWAL = true;  // a cache: after a crash it is colder, nothing more
    // A memtable flush writes up to one memtable; two may be full at once.
    min_free_bytes_ = 2 * static_cast<int64_t>(db_options_.write_buffer_size) + (1 << 20);
  }
  ~CachedObjectClient() override {
    CacheDb db;
    {
      absl::MutexLock lock(&mu_);
      db.swap(db_);
    }
    if (db != nullptr && RoomProblem().empty()) (void)db->Flush(rocksdb::FlushOptions());
  }

  // Opens the folder's cache as it is (a warm cache survives a restart); one that does not
  // open, or a disk short of room, starts it over empty; still short: put aside.
  void OpenAtStart() {
    Opened opened = Open(/*wipe_first=*/false);
    absl::MutexLock lock(&mu_);
    AdoptLocked(std::move(opened));
    // Under mu_, here and below: the gauge then follows the state changes in their order.
    if (options_.on_state) options_.on_state(db_ != nullptr);
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
    // A put-aside cache is started over empty when it comes back: nothing of it to drop.
    CacheDb db = Db();
    if (Cached(key) && db != nullptr) {
      const std::string from = Tagged(key, 0);  // key NUL: the first entry of this object
      std::string to(key);
      to.push_back('\1');  // past the last
      rocksdb::Status dropped = db->DeleteRange(write_, db->DefaultColumnFamily(), from, to);
      if (!dropped.ok()) PutAside(db, absl::StrCat("could not drop a deleted object's copies: ", dropped.ToString()));
    }
    return s;
  }

  absl::Status List(std::string_view prefix, const ObjectVisitor& visit) override { return inner_->List(prefix, visit); }
  absl::StatusOr<std::unique_ptr<ObjectWriter>> NewWriter(std::string_view key) override {
    return inner_->NewWriter(key);
  }

  int64_t CacheBytes() const override {
    CacheDb db;
    {
      absl::MutexLock lock(&mu_);
      db = db_;
    }
    if (db == nullptr) return 0;
    uint64_t files = 0, memtables = 0;
    db->GetIntProperty(rocksdb::DB::Properties::kTotalSstFilesSize, &files);
    db->GetIntProperty(rocksdb::DB::Properties::kCurSizeAllMemTables, &memtables);
    return static_cast<int64_t>(files + memtables);
  }

  std::string Problem() const override {
    absl::MutexLock lock(&mu_);
    return problem_;
  }

 private:
  bool Cached(std::string_view key) const {
    return std::any_of(options_.prefixes.begin(), options_.prefixes.end(),
                       [&](const std::string& p) { return key.starts_with(p); });
  }

  // The database to use now, or null while the cache is aside; a read past the retry time
  // tries to open it again first: one thread, with no lock held while it touches the disk (the
  // others read around the cache meanwhile).
  CacheDb Db() {
    {
      absl::MutexLock lock(&mu_);
      if (db_ != nullptr || opening_ || clock_->MonotonicNanos() < retry_at_ns_) return db_;
      opening_ = true;
    }
    Opened opened = Open(/*wipe_first=*/true);
    absl::MutexLock lock(&mu_);
    opening_ = false;
    AdoptLocked(std::move(opened));
    if (db_ != nullptr) {
      spdlog::info("object cache {}: working again (started empty)", options_.dir);
      if (options_.on_state) options_.on_state(true);
    }
    return db_;
  }

  std::optional<std::string> Find(const std::string& cache_key) {
    CacheDb db = Db();
    if (db == nullptr) return std::nullopt;
    std::string value;
    rocksdb::Status s = db->Get(rocksdb::ReadOptions(), cache_key, &value);
    if (!s.ok() && !s.IsNotFound()) PutAside(db, absl::StrCat("a read failed: ", s.ToString()));
    if (options_.on_lookup) options_.on_lookup(s.ok());
    if (!s.ok()) return std::nullopt;
    return value;
  }

  void Keep(const std::string& cache_key, std::string_view bytes) {
    // A value larger than a memtable would only push everything else out.
    if (static_cast<int64_t>(bytes.size()) > options_.max_bytes / 16) return;
    CacheDb db = Db();
    if (db == nullptr) return;
    // RocksDB aborts rather than fails on some writes to a full disk: look before writing
    // (statvfs at most once a second).
    if (std::string short_of_room = CheckRoom(); !short_of_room.empty()) {
      PutAside(db, short_of_room);
      return;
    }
    rocksdb::Status s = db->Put(write_, cache_key, rocksdb::Slice(bytes.data(), bytes.size()));
    if (!s.ok()) PutAside(db, absl::StrCat("a write failed: ", s.ToString()));
  }

  // Empty when the disk has room for the cache's writes; else why not. Looks at most once a
  // second, answering from the last look in between.
  std::string CheckRoom() {
    {
      absl::MutexLock lock(&mu_);
      const int64_t now = clock_->MonotonicNanos();
      if (now - room_checked_ns_ < 1'000'000'000 && room_checked_ns_ != 0) return "";
      room_checked_ns_ = now;
    }
    return RoomProblem();
  }

  // Reads only what is fixed at construction: no lock.
  std::string RoomProblem() const {
    absl::StatusOr<int64_t> free = options_.free_bytes(options_.dir);
    if (!free.ok()) return std::string(free.status().message());
    if (*free >= min_free_bytes_) return "";
    return absl::StrCat("its disk has ", *free >> 20, " MiB free, under the ", min_free_bytes_ >> 20,
                        " MiB two memtables need");
  }

  // An attempt to open the cache: the database, or why not.
  struct Opened {
    std::unique_ptr<rocksdb::DB> db;
    std::string why;
  };

  // Opens the cache's folder, touching only the disk (no lock held): a put-aside cache missed
  // deletes meanwhile, and a full disk may be full of it, so `wipe_first` starts it over.
  Opened Open(bool wipe_first) const {
    std::string why = wipe_first ? Wipe() : MakeFolder();
    if (why.empty() && !(why = RoomProblem()).empty() && !wipe_first) {
      why = Wipe();
      if (why.empty()) why = RoomProblem();
    }
    if (!why.empty()) return {nullptr, why};
    rocksdb::DB* db = nullptr;
    rocksdb::Status s = rocksdb::DB::Open(db_options_, options_.dir, &db);
    if (!s.ok() && !wipe_first) {
      // Damaged or another version's: start it over empty.
      spdlog::warn("object cache {} does not open ({}): starting it empty", options_.dir, s.ToString());
      if (why = Wipe(); !why.empty()) return {nullptr, why};
      s = rocksdb::DB::Open(db_options_, options_.dir, &db);
    }
    if (!s.ok()) return {nullptr, absl::StrCat("it does not open: ", s.ToString())};
    return {std::unique_ptr<rocksdb::DB>(db), ""};
  }

  // Takes an attempt's outcome: the database in use, or the reason and the next retry time.
  void AdoptLocked(Opened opened) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (opened.db != nullptr) {
      db_ = std::move(opened.db);
      problem_.clear();
      return;
    }
    const bool first = problem_.empty();
    problem_ = absl::StrCat("object cache ", options_.dir, " put aside (", opened.why, "): reads go to the object store");
    retry_at_ns_ = clock_->MonotonicNanos() + options_.retry_every_ns;
    if (first) spdlog::warn("{}; trying again every {} s", problem_, options_.retry_every_ns / 1'000'000'000);
  }

  // Empty when the folder is there (created if missing); else why not.
  std::string MakeFolder() const {
    std::error_code ec;
    std::filesystem::create_directories(options_.dir, ec);
    return ec ? absl::StrCat("cannot create it: ", ec.message()) : "";
  }

  // Deletes the cache's files (DestroyDB removes the folder too) and makes the folder again.
  std::string Wipe() const {
    (void)rocksdb::DestroyDB(options_.dir, db_options_);
    return MakeFolder();
  }

  // Stops using `db` (if it is still the one in use) after it failed; said once.
  void PutAside(const CacheDb& db, const std::string& why) {
    CacheDb closing;  // closed (when no read holds it) after the lock is let go
    absl::MutexLock lock(&mu_);
    if (db_ != db) return;  // another thread got there first
    closing.swap(db_);
    problem_ = absl::StrCat("object cache ", options_.dir, " put aside (", why, "): reads go to the object store");
    retry_at_ns_ = clock_->MonotonicNanos() + options_.retry_every_ns;
    spdlog::warn("{}; trying again every {} s", problem_, options_.retry_every_ns / 1'000'000'000);
    if (options_.on_state) options_.on_state(false);
  }

  std::unique_ptr<ObjectClient> inner_;
  ObjectCacheOptions options_;
  const rocksdb::Options db_options_;
  const Clock* const clock_;
  int64_t min_free_bytes_ = 0;
  rocksdb::WriteOptions write_;
  // Guards the database in use and the put-aside state only: no disk work runs under it (opens,
  // wipes, closes and flushes happen with it let go; statvfs too).
  mutable absl::Mutex mu_;
  CacheDb db_ ABSL_GUARDED_BY(mu_);
  std::string problem_ ABSL_GUARDED_BY(mu_);
  int64_t retry_at_ns_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t room_checked_ns_ ABSL_GUARDED_BY(mu_) = 0;
  bool opening_ ABSL_GUARDED_BY(mu_) = false;  // a thread is opening the cache (Db), no lock held
};

}  // namespace

absl::StatusOr<std::unique_ptr<ObjectClient>> NewCachedObjectClient(std::unique_ptr<ObjectClient> inner,
                                                                     const ObjectCacheOptions& options) {
  auto client = std::make_unique<CachedObjectClient>(std::move(inner), options);
  client->OpenAtStart();
  return std::unique_ptr<ObjectClient>(std::move(client));
}

}  // namespace fleetprof::cluster
