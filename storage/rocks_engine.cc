#include "storage/rocks_engine.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "rocksdb/cache.h"
#include "rocksdb/db.h"
#include "rocksdb/filter_policy.h"
#include "rocksdb/options.h"
#include "rocksdb/table.h"
#include "rocksdb/utilities/optimistic_transaction_db.h"
#include "spdlog/spdlog.h"
#include "storage/rocks_internal.h"
#include "storage/store_health_listener.h"

namespace fleetprof {
namespace rocks {

absl::Status ToStatus(const rocksdb::Status& s, absl::string_view what) {
  if (s.ok()) return absl::OkStatus();
  if (s.IsNotFound()) return absl::NotFoundError(absl::StrCat(what, ": not found"));
  return absl::InternalError(absl::StrCat(what, ": rocksdb: ", s.ToString()));
}

std::string PrefixEnd(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty() && static_cast<unsigned char>(end.back()) == 0xff) end.pop_back();
  if (!end.empty()) end.back() = static_cast<char>(end.back() + 1);
  return end;
}

}  // namespace rocks

namespace {

using rocks::ToStatus;

// Event blocks are read back at every pan and zoom of the trace viewer: a block cache of their
// own keeps recent ones uncompressed (RocksDB's default cache is 8 MiB for everything).
constexpr size_t kEventBlockCacheBytes = size_t{256} << 20;

rocksdb::ColumnFamilyOptions FamilyOptions(int family) {
  rocksdb::ColumnFamilyOptions options;
  options.compression = rocksdb::kZSTD;
  // zstd's fastest level: compressing flushes and compactions was a quarter of the server's CPU
  // with 4 uploads at once. Against the default level, in one alternated run of
  // bench/ingest_speed.sh: server CPU 5.8 -> 5.25 s/GB, upload+index -6%, and the disk no larger
  // (0.101 of the uploaded plain JSON against 0.104).
  options.compression_opts.level = 1;
  if (family == rocks::kEvents) {
    // Event blocks are varint-packed already (zstd keeps 0.76 of them), and their flush at
    // the end of an upload ran on the one flush thread while the upload's commit waited
    // behind it for its raw bytes' flush. LZ4 flushes them in a fraction of the time; the
    // compaction into the last level stores them as zstd again, so only the newest blocks
    // take LZ4's room (disk after a flush: 0.133 of the uploaded JSON, against 0.132). In
    // alternated runs: upload+index -8 ms, slowest commit 32 -> 12 ms.
    options.compression = rocksdb::kLZ4Compression;
    options.bottommost_compression = rocksdb::kZSTD;
    options.bottommost_compression_opts.level = 1;
    options.bottommost_compression_opts.enabled = true;
    static const std::shared_ptr<rocksdb::Cache> cache = rocksdb::NewLRUCache(kEventBlockCacheBytes);
    rocksdb::BlockBasedTableOptions table;
    table.block_cache = cache;
    table.cache_index_and_filter_blocks = true;
    table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
    options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  }
  if (family == rocks::kRaw) {
    // Uploaded bytes go to blob files at flush, and the table files hold only their keys:
    // concurrent uploads interleave their chunks in one memtable, so their table files overlap
    // and compaction would otherwise decompress and recompress every uploaded byte again.
    options.enable_blob_files = true;
    options.min_blob_size = 4096;
    // Uploads arrive as gzip members (upload_table.h) that nothing compresses further: LZ4 gives
    // up on them at once where zstd spent an eighth of the server's ingest CPU trying, and still
    // compresses parts kept as they came (from before gzip parts) when blob GC rewrites them.
    options.blob_compression_type = rocksdb::kLZ4Compression;
    options.enable_blob_garbage_collection = true;
  }
  // Small memtables keep ingest memory flat: uploaded bytes are flushed to blob files (and every
  // upload's are flushed at its commit anyway), event blocks are written once at the end of an
  // upload. With 16 MiB each, a 600 MB upload held 50 MB of raw and 23 MB of event memtables.
  options.write_buffer_size = (family == rocks::kRaw || family == rocks::kEvents) ? 4 << 20 : 8 << 20;
  options.max_write_buffer_number = 2;
  if (family == rocks::kRaw || family == rocks::kEvents || family == rocks::kSummaries) {
    // An optimistic-transaction database keeps flushed memtables in memory for its conflict
    // check (as much again as the memtables themselves) unless told otherwise. The catalog's
    // transactions never touch these families, so they keep no history: 1 byte is the least
    // RocksDB accepts as "set" (0 means its default).
    options.max_write_buffer_size_to_maintain = 1;
  }
  return options;
}

// AwaitBackgroundWork gives running flushes and compactions this long at most: a compaction of
// a large database can take longer, and retention then measures it mid-way (over by what it
// has written so far) rather than stop deleting while compactions keep coming, or hold up a
// shutdown.
constexpr int kBackgroundWaitPollMs = 20;
constexpr int kBackgroundWaitPolls = 5'000 / kBackgroundWaitPollMs;

// What du counts under `dir`: every file and folder at the disk blocks it holds, a file at its
// size where that is more (a sparse file, a file system that reports no blocks).
int64_t DiskBytesUnder(const std::string& dir) {
  std::error_code ec;
  int64_t total = 0;
  auto add = [&total](const std::filesystem::path& path) {
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0) return;  // gone meanwhile (a compaction's input)
    const int64_t allocated = static_cast<int64_t>(st.st_blocks) * 512;
    total += S_ISREG(st.st_mode) ? std::max<int64_t>(allocated, st.st_size) : allocated;
  };
  add(dir);
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    add(it->path());
  }
  return total;
}

int64_t FamilyDiskBytes(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* handle) {
  uint64_t tables = 0, blobs = 0;
  db->GetIntProperty(handle, "rocksdb.total-sst-files-size", &tables);
  db->GetIntProperty(handle, "rocksdb.total-blob-file-size", &blobs);
  return static_cast<int64_t>(tables + blobs);
}

class RocksEngine : public StorageEngine {
 public:
  RocksEngine(std::string dir, rocksdb::OptimisticTransactionDB* db, std::vector<rocksdb::ColumnFamilyHandle*> handles,
              std::shared_ptr<StoreHealthListener> health)
      : dir_(std::move(dir)),
        db_(db),
        handles_(std::move(handles)),
        health_(std::move(health)),
        catalog_(rocks::NewCatalog(db_, handles_)),
        // The base database: an optimistic-transaction database refuses DeleteRange.
        blobs_(rocks::NewBlobStore(db_->GetBaseDB(), handles_)) {}

  ~RocksEngine() override {
    catalog_.reset();
    blobs_.reset();
    for (auto* handle : handles_) db_->DestroyColumnFamilyHandle(handle);
    db_->Close();
    delete db_;
  }

  Catalog& catalog() override { return *catalog_; }
  BlobStore& blobs() override { return *blobs_; }

  StoreHealth Health() const override { return health_->Get(); }

  bool TryResume() override {
    if (health_->Get().serving) return true;
    rocksdb::Status s = db_->Resume();
    if (!s.ok()) {
      spdlog::debug("database resume failed: {}", s.ToString());
      return false;
    }
    health_->Recovered();
    spdlog::info("database writes resumed after a background error");
    return true;
  }

  absl::Status Flush() override {
    rocksdb::FlushOptions options;
    for (auto* handle : handles_) {
      if (rocksdb::Status s = db_->Flush(options, handle); !s.ok()) return ToStatus(s, "flush");
    }
    return absl::OkStatus();
  }

  StorageUsage Usage() override {
    StorageUsage usage;
    uint64_t n = 0;
    db_->GetIntProperty(handles_[rocks::kProfiles], "rocksdb.estimate-num-keys", &n);
    usage.profiles = static_cast<int64_t>(n);
    for (auto* handle : handles_) usage.disk_bytes += FamilyDiskBytes(db_, handle);
    usage.event_disk_bytes = FamilyDiskBytes(db_, handles_[rocks::kEvents]);
    usage.raw_disk_bytes = FamilyDiskBytes(db_, handles_[rocks::kRaw]);
    return usage;
  }

  int64_t FolderBytes() const override { return DiskBytesUnder(dir_); }

  void AwaitBackgroundWork() override {
    // Polled: RocksDB 7.8 has no call that waits for running jobs without pausing new ones
    // (PauseBackgroundWork would hold every flush, and so the uploads, behind a long compaction).
    for (int i = 0; i < kBackgroundWaitPolls && BackgroundJobsRunning(); ++i) {
      absl::SleepFor(absl::Milliseconds(kBackgroundWaitPollMs));
    }
  }

  int64_t CountEventBlocks() override {
    int64_t n = 0;
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), handles_[rocks::kEvents]));
    for (it->SeekToFirst(); it->Valid(); it->Next()) ++n;
    return n;
  }

 private:
  bool BackgroundJobsRunning() {
    uint64_t flushes = 0, compactions = 0;
    db_->GetIntProperty("rocksdb.num-running-flushes", &flushes);
    db_->GetIntProperty("rocksdb.num-running-compactions", &compactions);
    return flushes + compactions > 0;
  }

  std::string dir_;
  rocksdb::OptimisticTransactionDB* db_;  // owned
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
  std::shared_ptr<StoreHealthListener> health_;
  std::unique_ptr<Catalog> catalog_;
  std::unique_ptr<BlobStore> blobs_;
};

// RocksDB's own files, beside the tables and blobs, all within --max_disk_mb (which counts the
// folder as du does) and none growing without bound:
void BoundOwnFiles(rocksdb::DBOptions* options) {
  // No preallocated room: RocksDB fallocates 4 MiB ahead of the MANIFEST's few KiB and 1.1
  // write buffers (8.8 MiB) ahead of a write-ahead log's first record. du counts that room, and
  // at --max_disk_mb=40 it was the 4 MiB by which the folder stayed over the limit.
  options->allow_fallocate = false;
  // The info LOG: rolled at 512 KiB, with 3 old ones kept (at most 2 MiB; about 200 uploads'
  // flushes each). Unrolled, it grew for as long as the server ran. RocksDB's statistics dump
  // (10 families every 10 minutes) would be most of it: the server's own metrics say what an
  // operator needs.
  options->info_log_level = rocksdb::InfoLogLevel::INFO_LEVEL;
  options->max_log_file_size = 512 << 10;
  options->keep_log_file_num = 3;
  options->stats_dump_period_sec = 0;
  // The MANIFEST is rewritten from its current state past 1 MiB (about 1,500 uploads' edits)
  // instead of RocksDB's 1 GiB.
  options->max_manifest_file_size = 1 << 20;
  // Write-ahead logs live until every family with records in them flushes; the catalog's
  // families flush rarely, so RocksDB's own bound (4x every write buffer: 576 MiB here) was the
  // only one. Past 32 MiB the families holding the oldest log flush. Logs are never recycled
  // (recycle_log_file_num 0): a recycled log keeps its size.
  options->max_total_wal_size = 32 << 20;
  options->recycle_log_file_num = 0;
}

}  // namespace

absl::StatusOr<std::unique_ptr<StorageEngine>> OpenRocksEngine(const std::string& dir, const StoreOptions& store_options) {
  if (store_options.max_open_files != -1 && store_options.max_open_files < 20) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max_open_files=", store_options.max_open_files, " must be at least 20 (or -1)"));
  }
  auto health = std::make_shared<StoreHealthListener>(store_options.on_background_error);
  rocksdb::DBOptions options;
  options.create_if_missing = true;
  options.create_missing_column_families = true;
  // Two flush threads and one for compaction (set so, RocksDB ignores max_background_jobs; its
  // 2 jobs gave one flush thread): an upload's commit flushes its raw bytes and must not wait
  // behind another family's flush.
  options.max_background_flushes = 2;
  options.max_background_compactions = 1;
  BoundOwnFiles(&options);
  options.max_open_files = store_options.max_open_files;
  options.listeners.push_back(health);
  if (store_options.env != nullptr) options.env = store_options.env;
  std::vector<rocksdb::ColumnFamilyDescriptor> families;
  for (int i = 0; i < rocks::kFamilyCount; ++i) families.emplace_back(rocks::kFamilies[i], FamilyOptions(i));
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::OptimisticTransactionDB* db = nullptr;
  // An optimistic-transaction database is the same files as a plain one: it only adds the
  // conflict check that the catalog's compare-and-set commit needs.
  rocksdb::OptimisticTransactionDBOptions occ;
  // The conflict check locks one of these buckets per written key; RocksDB's default (2^20
  // mutexes) is 42 MB of memory for a catalog that commits a few keys at a time.
  occ.occ_lock_buckets = size_t{1} << 14;
  rocksdb::Status s = rocksdb::OptimisticTransactionDB::Open(options, occ, dir, families, &handles, &db);
  if (!s.ok()) return ToStatus(s, absl::StrCat("open database ", dir));
  return std::unique_ptr<StorageEngine>(new RocksEngine(dir, db, std::move(handles), std::move(health)));
}

}  // namespace fleetprof
