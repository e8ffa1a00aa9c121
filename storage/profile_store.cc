#include "storage/profile_store.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>

#include "absl/strings/str_cat.h"
#include "rocksdb/cache.h"
#include "rocksdb/db.h"
#include "rocksdb/filter_policy.h"
#include "rocksdb/table.h"
#include "rocksdb/options.h"
#include "spdlog/spdlog.h"
#include "storage/store_health_listener.h"
#include "rocksdb/utilities/options_util.h"
#include "rocksdb/write_batch.h"
#include "storage/store_keys.h"

namespace fleetprof {
namespace {

namespace keys = store_keys;

// Column family order; handles_[i] belongs to kFamilies[i].
enum Family { kDefault, kProfiles, kSummaries, kIndex, kRaw, kUploads, kAgents, kCaptures, kEvents, kSchedules };
const char* const kFamilies[] = {"default", "profiles", "summaries", "index",  "raw",
                                 "uploads", "agents",   "captures",  "events", "schedules"};
constexpr int kFamilyCount = sizeof(kFamilies) / sizeof(kFamilies[0]);

absl::Status ToStatus(const rocksdb::Status& s, absl::string_view what) {
  if (s.ok()) return absl::OkStatus();
  if (s.IsNotFound()) return absl::NotFoundError(absl::StrCat(what, ": not found"));
  return absl::InternalError(absl::StrCat(what, ": rocksdb: ", s.ToString()));
}

// Event blocks are read back at every pan and zoom of the trace viewer: a block cache of their
// own keeps recent ones uncompressed (RocksDB's default cache is 8 MiB for everything).
constexpr size_t kEventBlockCacheBytes = size_t{256} << 20;

rocksdb::ColumnFamilyOptions FamilyOptions(int family) {
  rocksdb::ColumnFamilyOptions options;
  options.compression = rocksdb::kZSTD;
  if (family == kEvents) {
    static const std::shared_ptr<rocksdb::Cache> cache = rocksdb::NewLRUCache(kEventBlockCacheBytes);
    rocksdb::BlockBasedTableOptions table;
    table.block_cache = cache;
    table.cache_index_and_filter_blocks = true;
    table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
    options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  }
  // Raw uploads are large and written once: small memtables keep ingest memory flat.
  options.write_buffer_size = (family == kRaw || family == kEvents) ? 16 << 20 : 8 << 20;
  options.max_write_buffer_number = 2;
  return options;
}

template <typename Message>
absl::StatusOr<Message> GetMessage(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf,
                                   const std::string& key, absl::string_view what) {
  std::string value;
  rocksdb::Status s = db->Get(rocksdb::ReadOptions(), cf, key, &value);
  if (!s.ok()) return ToStatus(s, absl::StrCat(what, " ", key));
  Message message;
  if (!message.ParseFromString(value)) {
    return absl::DataLossError(absl::StrCat(what, " ", key, ": stored record does not parse"));
  }
  return message;
}

// Streams an upload's raw chunks back in offset order.
class RawChunkSource : public analysis::ByteSource {
 public:
  RawChunkSource(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf, std::string upload_id)
      : prefix_(keys::RawPrefix(upload_id)), name_(std::move(upload_id)) {
    it_.reset(db->NewIterator(rocksdb::ReadOptions(), cf));
    it_->Seek(prefix_);
  }

  absl::StatusOr<size_t> Read(char* buf, size_t n) override {
    while (pos_ >= chunk_.size()) {
      if (!it_->Valid() || !it_->key().starts_with(prefix_)) {
        if (!it_->status().ok()) return ToStatus(it_->status(), "raw read");
        return 0;
      }
      chunk_ = it_->value().ToString();
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
  std::string chunk_;
  size_t pos_ = 0;
};

constexpr size_t kTimelineBatchBytes = 4 << 20;

class RocksTimelineWriter : public timeline::TimelineWriter {
 public:
  RocksTimelineWriter(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf, std::string profile_id)
      : db_(db), cf_(cf), id_(std::move(profile_id)) {}

  absl::Status PutBlock(uint32_t track, uint32_t level, uint32_t block, std::string bytes) override {
    return Put(keys::TimelineBlockKey(id_, track, level, block), bytes);
  }
  absl::Status PutNames(uint32_t chunk, std::string bytes) override {
    return Put(keys::TimelineNamesKey(id_, chunk), bytes);
  }
  absl::Status PutDirectory(std::string bytes) override {
    if (absl::Status s = Put(keys::TimelineDirectoryKey(id_), bytes); !s.ok()) return s;
    return Flush();
  }

 private:
  absl::Status Put(const std::string& key, const std::string& value) {
    batch_.Put(cf_, key, value);
    return batch_.GetDataSize() >= kTimelineBatchBytes ? Flush() : absl::OkStatus();
  }
  absl::Status Flush() {
    if (batch_.Count() == 0) return absl::OkStatus();
    absl::Status s = ToStatus(db_->Write(rocksdb::WriteOptions(), &batch_), "write event blocks");
    batch_.Clear();
    return s;
  }

  rocksdb::DB* db_;
  rocksdb::ColumnFamilyHandle* cf_;
  std::string id_;
  rocksdb::WriteBatch batch_;
};

class RocksTimelineReader : public timeline::TimelineReader {
 public:
  RocksTimelineReader(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf, std::string profile_id)
      : db_(db), cf_(cf), id_(std::move(profile_id)) {}

  absl::StatusOr<std::string> GetBlock(uint32_t track, uint32_t level, uint32_t block) override {
    return Get(keys::TimelineBlockKey(id_, track, level, block), "event block");
  }
  absl::StatusOr<std::string> GetNames(uint32_t chunk) override {
    return Get(keys::TimelineNamesKey(id_, chunk), "event names");
  }
  absl::StatusOr<std::string> GetDirectory() override {
    return Get(keys::TimelineDirectoryKey(id_), "event directory");
  }

 private:
  absl::StatusOr<std::string> Get(const std::string& key, absl::string_view what) {
    std::string value;
    rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), cf_, key, &value);
    if (!s.ok()) return ToStatus(s, absl::StrCat(what, " of profile ", id_));
    return value;
  }

  rocksdb::DB* db_;
  rocksdb::ColumnFamilyHandle* cf_;
  std::string id_;
};

}  // namespace

std::unique_ptr<timeline::TimelineWriter> ProfileStore::NewTimelineWriter(const std::string& profile_id) {
  return std::make_unique<RocksTimelineWriter>(db_.get(), cf(kEvents), profile_id);
}

std::unique_ptr<timeline::TimelineReader> ProfileStore::NewTimelineReader(const std::string& profile_id) {
  return std::make_unique<RocksTimelineReader>(db_.get(), cf(kEvents), profile_id);
}

absl::Status ProfileStore::DeleteTimeline(const std::string& profile_id) {
  std::string begin = keys::TimelinePrefix(profile_id);
  std::string end = begin;
  end.back() = '\1';
  return ToStatus(db_->DeleteRange(rocksdb::WriteOptions(), cf(kEvents), begin, end), "delete event blocks");
}

absl::StatusOr<int> ProfileStore::DeleteOrphanTimelines() {
  std::vector<std::string> orphans;
  {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), cf(kEvents)));
    it->SeekToFirst();
    while (it->Valid()) {
      std::string_view key(it->key().data(), it->key().size());
      std::string id(key.substr(0, key.find('\0')));
      std::string value;
      rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), cf(kProfiles), id, &value);
      if (s.IsNotFound()) {
        orphans.push_back(id);
      } else if (!s.ok()) {
        return ToStatus(s, "look up profile");
      }
      std::string next = keys::TimelinePrefix(id);
      next.back() = '\1';
      it->Seek(next);
    }
    if (!it->status().ok()) return ToStatus(it->status(), "scan event blocks");
  }
  for (const std::string& id : orphans) {
    if (absl::Status s = DeleteTimeline(id); !s.ok()) return s;
  }
  return static_cast<int>(orphans.size());
}

int64_t ProfileStore::CountTimelineKeys() {
  int64_t n = 0;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), cf(kEvents)));
  for (it->SeekToFirst(); it->Valid(); it->Next()) ++n;
  return n;
}

namespace {
int64_t FamilyDiskBytes(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* handle) {
  uint64_t n = 0;
  db->GetIntProperty(handle, "rocksdb.total-sst-files-size", &n);
  return static_cast<int64_t>(n);
}
}  // namespace

int64_t ProfileStore::TimelineDiskBytes() { return FamilyDiskBytes(db_.get(), cf(kEvents)); }
int64_t ProfileStore::RawDiskBytes() { return FamilyDiskBytes(db_.get(), cf(kRaw)); }

absl::StatusOr<std::unique_ptr<ProfileStore>> ProfileStore::Open(const std::string& dir,
                                                                 const StoreOptions& store_options) {
  if (store_options.max_open_files != -1 && store_options.max_open_files < 20) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max_open_files=", store_options.max_open_files, " must be at least 20 (or -1)"));
  }
  auto health = std::make_shared<StoreHealthListener>(store_options.on_background_error);
  rocksdb::DBOptions options;
  options.create_if_missing = true;
  options.create_missing_column_families = true;
  options.max_background_jobs = 2;
  options.keep_log_file_num = 4;
  options.max_open_files = store_options.max_open_files;
  options.listeners.push_back(health);
  if (store_options.env != nullptr) options.env = store_options.env;
  std::vector<rocksdb::ColumnFamilyDescriptor> families;
  for (int i = 0; i < kFamilyCount; ++i) families.emplace_back(kFamilies[i], FamilyOptions(i));
  std::unique_ptr<ProfileStore> store(new ProfileStore());
  rocksdb::DB* db = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(options, dir, families, &store->handles_, &db);
  if (!s.ok()) return ToStatus(s, absl::StrCat("open database ", dir));
  store->db_.reset(db);
  store->dir_ = dir;
  store->health_ = std::move(health);
  return store;
}

StoreHealth ProfileStore::Health() const { return health_->Get(); }

bool ProfileStore::TryResume() {
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

void ProfileStore::ReportUnreadable(const char* kind, std::string_view key) {
  ++unreadable_records_;
  spdlog::error("stored {} record {} does not parse; it is left in place and not listed", kind,
                std::string(key));
}

ProfileStore::~ProfileStore() {
  for (auto* handle : handles_) db_->DestroyColumnFamilyHandle(handle);
  if (db_) db_->Close();
}

absl::StatusOr<std::optional<v1::UploadRecord>> ProfileStore::GetUpload(
    const std::string& upload_id) {
  auto record = GetMessage<v1::UploadRecord>(db_.get(), cf(kUploads), upload_id, "upload");
  if (absl::IsNotFound(record.status())) return std::optional<v1::UploadRecord>();
  if (!record.ok()) return record.status();
  return std::optional<v1::UploadRecord>(*std::move(record));
}

absl::Status ProfileStore::PutUpload(const std::string& upload_id,
                                     const v1::UploadRecord& record) {
  return ToStatus(db_->Put(rocksdb::WriteOptions(), cf(kUploads), upload_id,
                           record.SerializeAsString()),
                  "put upload");
}

absl::Status ProfileStore::AppendRaw(const std::string& upload_id, v1::UploadRecord& record,
                                     std::string_view bytes) {
  rocksdb::WriteBatch batch;
  batch.Put(cf(kRaw), keys::RawKey(upload_id, record.received_bytes()),
            rocksdb::Slice(bytes.data(), bytes.size()));
  record.set_received_bytes(record.received_bytes() + static_cast<int64_t>(bytes.size()));
  batch.Put(cf(kUploads), upload_id, record.SerializeAsString());
  return ToStatus(db_->Write(rocksdb::WriteOptions(), &batch), "append upload bytes");
}

std::unique_ptr<analysis::ByteSource> ProfileStore::ReadRaw(const std::string& upload_id) {
  return std::make_unique<RawChunkSource>(db_.get(), cf(kRaw), upload_id);
}

absl::Status ProfileStore::AbortUpload(const std::string& upload_id) {
  rocksdb::WriteBatch batch;
  std::string begin = keys::RawPrefix(upload_id);
  std::string end = begin;
  end.back() = '\1';  // just past every key with the "id\0" prefix
  batch.DeleteRange(cf(kRaw), begin, end);
  batch.Delete(cf(kUploads), upload_id);
  return ToStatus(db_->Write(rocksdb::WriteOptions(), &batch), "abort upload");
}

absl::StatusOr<int> ProfileStore::CleanStaleUploads(int64_t older_than_ns) {
  std::vector<std::string> stale;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), cf(kUploads)));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    v1::UploadRecord record;
    if (!record.ParseFromArray(it->value().data(), static_cast<int>(it->value().size()))) {
      ReportUnreadable("upload", it->key().ToStringView());
      continue;
    }
    if (record.profile_id().empty() && record.updated_at_ns() < older_than_ns) {
      stale.push_back(it->key().ToString());
    }
  }
  for (const auto& id : stale) {
    if (absl::Status s = AbortUpload(id); !s.ok()) return s;
  }
  return static_cast<int>(stale.size());
}

absl::Status ProfileStore::CommitProfile(const v1::ProfileInfo& info,
                                         const v1::ProfileSummary& summary) {
  const std::string& id = info.profile_id();
  const int64_t t = info.ingested_at_ns();
  rocksdb::WriteBatch batch;
  batch.Put(cf(kProfiles), id, info.SerializeAsString());
  batch.Put(cf(kSummaries), id, summary.SerializeAsString());
  batch.Put(cf(kIndex), keys::AllIndex(t, id), "");
  batch.Put(cf(kIndex), keys::JobIndex(info.job(), t, id), "");
  for (const auto& [key, value] : info.labels()) {
    batch.Put(cf(kIndex), keys::LabelIndex(key, value, t, id), "");
  }
  if (!info.upload_id().empty()) {
    auto record = GetUpload(info.upload_id());
    if (!record.ok()) return record.status();
    v1::UploadRecord committed = record->value_or(v1::UploadRecord());
    committed.set_profile_id(id);
    committed.set_updated_at_ns(t);
    batch.Put(cf(kUploads), info.upload_id(), committed.SerializeAsString());
  }
  rocksdb::WriteOptions options;
  options.sync = true;  // a committed profile survives a crash
  return ToStatus(db_->Write(options, &batch), "commit profile");
}

absl::Status ProfileStore::DeleteProfile(const std::string& profile_id) {
  auto info = GetProfile(profile_id);
  if (!info.ok()) return info.status();
  const int64_t t = info->ingested_at_ns();
  rocksdb::WriteBatch batch;
  batch.Delete(cf(kProfiles), profile_id);
  batch.Delete(cf(kSummaries), profile_id);
  batch.Delete(cf(kIndex), keys::AllIndex(t, profile_id));
  batch.Delete(cf(kIndex), keys::JobIndex(info->job(), t, profile_id));
  for (const auto& [key, value] : info->labels()) batch.Delete(cf(kIndex), keys::LabelIndex(key, value, t, profile_id));
  std::string raw_begin, raw_end;
  if (!info->upload_id().empty()) {
    raw_begin = keys::RawPrefix(info->upload_id());
    raw_end = raw_begin;
    raw_end.back() = '\1';
    batch.DeleteRange(cf(kRaw), raw_begin, raw_end);
    batch.Delete(cf(kUploads), info->upload_id());
  }
  std::string events_begin = keys::TimelinePrefix(profile_id);
  std::string events_end = events_begin;
  events_end.back() = '\1';
  batch.DeleteRange(cf(kEvents), events_begin, events_end);
  rocksdb::WriteOptions options;
  options.sync = true;
  if (absl::Status s = ToStatus(db_->Write(options, &batch), "delete profile"); !s.ok()) return s;
  // Range tombstones hide the bytes at once; compaction drops them from disk.
  rocksdb::CompactRangeOptions compact;
  rocksdb::Slice eb(events_begin), ee(events_end);
  if (absl::Status s = ToStatus(db_->CompactRange(compact, cf(kEvents), &eb, &ee), "compact event store"); !s.ok()) {
    return s;
  }
  if (!raw_begin.empty()) {
    rocksdb::Slice rb(raw_begin), re(raw_end);
    return ToStatus(db_->CompactRange(compact, cf(kRaw), &rb, &re), "compact uploaded bytes");
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::ProfileInfo> ProfileStore::GetProfile(const std::string& profile_id) {
  return GetMessage<v1::ProfileInfo>(db_.get(), cf(kProfiles), profile_id, "profile");
}

absl::StatusOr<v1::ProfileSummary> ProfileStore::GetSummary(const std::string& profile_id) {
  return GetMessage<v1::ProfileSummary>(db_.get(), cf(kSummaries), profile_id, "profile");
}

namespace {

bool Matches(const v1::ProfileInfo& info, const v1::ListProfilesRequest& request) {
  if (!request.job().empty() && info.job() != request.job()) return false;
  for (const auto& [key, value] : request.labels()) {
    auto it = info.labels().find(key);
    if (it == info.labels().end() || it->second != value) return false;
  }
  if (request.start_after_ns() != 0 && info.end_ns() < request.start_after_ns()) return false;
  if (request.end_before_ns() != 0 && info.start_ns() > request.end_before_ns()) return false;
  return true;
}

}  // namespace

absl::StatusOr<ProfilePage> ProfileStore::ListProfiles(const v1::ListProfilesRequest& request) {
  // Scan the most selective index; check every other condition on the record itself.
  std::string prefix(keys::kAllIndexPrefix);
  if (!request.job().empty()) {
    prefix = keys::JobIndexPrefix(request.job());
  } else if (!request.labels().empty()) {
    // Protobuf map order varies between messages; page 2 must pick the same index as page 1.
    std::map<std::string, std::string> sorted(request.labels().begin(), request.labels().end());
    prefix = keys::LabelIndexPrefix(sorted.begin()->first, sorted.begin()->second);
  }
  int page_size = request.page_size() <= 0 ? 100 : std::min(request.page_size(), 1000);
  std::string resume;
  if (!request.page_token().empty() &&
      (!keys::FromHex(request.page_token(), &resume) || !resume.starts_with(prefix))) {
    return absl::InvalidArgumentError("page_token does not belong to this query");
  }

  ProfilePage page;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), cf(kIndex)));
  it->Seek(resume.empty() ? prefix : resume);
  if (!resume.empty() && it->Valid() && it->key().ToStringView() == resume) it->Next();
  for (; it->Valid() && it->key().starts_with(prefix); it->Next()) {
    std::string id = keys::ProfileIdFromIndexKey(it->key().ToStringView(), prefix.size());
    auto info = GetProfile(id);
    if (absl::IsNotFound(info.status())) continue;  // deleted meanwhile: never half-visible
    if (!info.ok()) {
      page.unreadable.push_back(UnreadableRecord{id, std::string(info.status().message())});
      continue;
    }
    if (!Matches(*info, request)) continue;
    page.profiles.push_back(*std::move(info));
    if (static_cast<int>(page.profiles.size()) == page_size) {
      std::string last = it->key().ToString();
      it->Next();
      if (it->Valid() && it->key().starts_with(prefix)) page.next_page_token = keys::ToHex(last);
      break;
    }
  }
  if (!it->status().ok()) return ToStatus(it->status(), "list profiles");
  return page;
}

int64_t ProfileStore::CountProfiles() {
  uint64_t n = 0;
  db_->GetIntProperty(cf(kProfiles), "rocksdb.estimate-num-keys", &n);
  return static_cast<int64_t>(n);
}

int64_t ProfileStore::DiskBytes() {
  uint64_t total = 0;
  for (auto* handle : handles_) {
    uint64_t n = 0;
    if (db_->GetIntProperty(handle, "rocksdb.total-sst-files-size", &n)) total += n;
  }
  return static_cast<int64_t>(total);
}

absl::Status ProfileStore::PutAgent(const v1::AgentInfo& agent) {
  return ToStatus(db_->Put(rocksdb::WriteOptions(), cf(kAgents), agent.node(),
                           agent.SerializeAsString()),
                  "put agent");
}

absl::StatusOr<std::vector<v1::AgentInfo>> ProfileStore::ListAgents() {
  std::vector<v1::AgentInfo> agents;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), cf(kAgents)));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    v1::AgentInfo agent;
    if (!agent.ParseFromArray(it->value().data(), static_cast<int>(it->value().size()))) {
      ReportUnreadable("agent", it->key().ToStringView());
      continue;
    }
    agents.push_back(std::move(agent));
  }
  if (!it->status().ok()) return ToStatus(it->status(), "list agents");
  return agents;
}

absl::Status ProfileStore::PutCapture(const v1::Capture& capture) {
  return ToStatus(db_->Put(rocksdb::WriteOptions(), cf(kCaptures), capture.capture_id(),
                           capture.SerializeAsString()),
                  "put capture");
}

absl::StatusOr<v1::Capture> ProfileStore::GetCapture(const std::string& capture_id) {
  return GetMessage<v1::Capture>(db_.get(), cf(kCaptures), capture_id, "capture");
}

absl::StatusOr<std::vector<v1::Capture>> ProfileStore::ListCaptures(const std::string& job,
                                                                   int limit) {
  std::vector<v1::Capture> captures;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), cf(kCaptures)));
  for (it->SeekToLast(); it->Valid() && static_cast<int>(captures.size()) < limit; it->Prev()) {
    v1::Capture capture;
    if (!capture.ParseFromArray(it->value().data(), static_cast<int>(it->value().size()))) {
      ReportUnreadable("capture", it->key().ToStringView());
      continue;
    }
    if (!job.empty() && capture.request().job() != job) continue;
    captures.push_back(std::move(capture));
  }
  if (!it->status().ok()) return ToStatus(it->status(), "list captures");
  return captures;
}

absl::Status ProfileStore::PutSchedule(const v1::Schedule& schedule) {
  rocksdb::WriteOptions synced;
  synced.sync = true;
  return ToStatus(db_->Put(synced, cf(kSchedules), schedule.schedule_id(), schedule.SerializeAsString()),
                  "put schedule");
}

absl::Status ProfileStore::DeleteSchedule(const std::string& schedule_id) {
  std::string value;
  rocksdb::Status found = db_->Get(rocksdb::ReadOptions(), cf(kSchedules), schedule_id, &value);
  if (!found.ok()) return ToStatus(found, absl::StrCat("schedule ", schedule_id));
  rocksdb::WriteOptions synced;
  synced.sync = true;
  return ToStatus(db_->Delete(synced, cf(kSchedules), schedule_id), "delete schedule");
}

absl::StatusOr<std::vector<v1::Schedule>> ProfileStore::ListSchedules() {
  std::vector<v1::Schedule> schedules;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), cf(kSchedules)));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    v1::Schedule schedule;
    if (!schedule.ParseFromArray(it->value().data(), static_cast<int>(it->value().size()))) {
      ReportUnreadable("schedule", it->key().ToStringView());
      continue;
    }
    schedules.push_back(std::move(schedule));
  }
  if (!it->status().ok()) return ToStatus(it->status(), "list schedules");
  return schedules;
}

absl::Status ProfileStore::ForEachProfileOldestFirst(const std::function<bool(const v1::ProfileInfo&)>& visit) {
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), cf(kIndex)));
  // The all-profiles index is newest first: walk it backwards from its last key.
  std::string end(keys::kAllIndexPrefix);
  end.back() = static_cast<char>(end.back() + 1);
  for (it->SeekForPrev(end); it->Valid() && it->key().starts_with(keys::kAllIndexPrefix); it->Prev()) {
    const std::string id = keys::ProfileIdFromIndexKey(it->key().ToStringView(), keys::kAllIndexPrefix.size());
    auto info = GetProfile(id);
    if (absl::IsNotFound(info.status())) continue;  // deleted meanwhile
    if (absl::IsDataLoss(info.status())) {
      ReportUnreadable("profile", id);
      continue;
    }
    if (!info.ok()) return info.status();
    if (!visit(*info)) break;
  }
  return ToStatus(it->status(), "list profiles oldest first");
}

absl::StatusOr<int64_t> ProfileStore::DeleteCapturesBefore(int64_t created_before_ns) {
  rocksdb::WriteBatch batch;
  int64_t n = 0;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), cf(kCaptures)));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    v1::Capture capture;
    // An unreadable record goes too: nothing can show it.
    if (capture.ParseFromArray(it->value().data(), static_cast<int>(it->value().size())) &&
        capture.created_at_ns() >= created_before_ns) {
      continue;
    }
    batch.Delete(cf(kCaptures), it->key());
    ++n;
  }
  if (!it->status().ok()) return ToStatus(it->status(), "list captures");
  if (n == 0) return n;
  if (absl::Status s = ToStatus(db_->Write(rocksdb::WriteOptions(), &batch), "delete captures"); !s.ok()) return s;
  return n;
}

absl::Status ProfileStore::DeleteAgent(const std::string& node) {
  return ToStatus(db_->Delete(rocksdb::WriteOptions(), cf(kAgents), node), "delete agent");
}

int64_t ProfileStore::FolderBytes() const {
  std::error_code ec;
  int64_t total = 0;
  for (auto it = std::filesystem::recursive_directory_iterator(dir_, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code size_ec;
    if (it->is_regular_file(size_ec)) {
      const auto size = it->file_size(size_ec);
      if (!size_ec) total += static_cast<int64_t>(size);
    }
  }
  return total;
}

absl::Status ProfileStore::Flush() {
  rocksdb::FlushOptions options;
  for (auto* handle : handles_) {
    rocksdb::Status s = db_->Flush(options, handle);
    if (!s.ok()) return ToStatus(s, "flush");
  }
  return absl::OkStatus();
}

}  // namespace fleetprof
