#pragma once
// ProfileStore owns fleetprof's RocksDB layout: no other module knows a key or a column
// family. One database, one column family per kind of record:
//   profiles   profile_id                      -> ProfileInfo
//   summaries  profile_id                      -> ProfileSummary
//   index      "t/" inv_time id                -> ""   (all profiles, newest ingest first)
//              "j/" job \0 inv_time id         -> ""
//              "l/" key=value \0 inv_time id   -> ""
//   raw        upload_id \0 be64(offset)       -> original bytes (RocksDB compresses them)
//   uploads    upload_id                       -> UploadRecord (partial or committed)
//   agents     node                            -> AgentInfo
//   captures   capture_id                      -> Capture
//   schedules  schedule_id                     -> Schedule
//   events     profile_id \0 'b'|'n'|'d' ...   -> event blocks, names, directory (timeline/)
// inv_time is big-endian (INT64_MAX - ingested_at_ns), so a forward scan is newest first.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "analysis/byte_source.h"
#include "fleetprof/v1/agent.pb.h"
#include "fleetprof/v1/capture.pb.h"
#include "fleetprof/v1/profile.pb.h"
#include "fleetprof/v1/query.pb.h"
#include "fleetprof/v1/records.pb.h"
#include "fleetprof/v1/schedule.pb.h"
#include "timeline/timeline_store.h"

namespace rocksdb {
class DB;
class ColumnFamilyHandle;
class Env;
}  // namespace rocksdb

namespace fleetprof {

// A stored record that does not parse (a bug or a damaged disk): reported, never skipped.
struct UnreadableRecord {
  std::string key;  // the profile id, node, capture id, …
  std::string error;
};

struct ProfilePage {
  std::vector<v1::ProfileInfo> profiles;
  std::string next_page_token;
  std::vector<UnreadableRecord> unreadable;  // index entries whose profile does not parse
};

// Whether the database takes writes (RocksDB stops after a background error).
struct StoreHealth {
  bool serving = true;            // writes are taken
  std::string error;              // while not serving: RocksDB's background error
  int64_t background_errors = 0;  // since the store opened
};

class StoreHealthListener;

struct StoreOptions {
  // Files RocksDB keeps open at once (its table cache). -1, RocksDB's default, opens every
  // table file and keeps it: a large database then meets the process's fd limit.
  int max_open_files = 512;
  // Hears each background error's reason (flush, compaction, …), on RocksDB's thread.
  std::function<void(const std::string& reason)> on_background_error;
  // Tests: a file system that fails on demand. Not owned; outlives the store.
  rocksdb::Env* env = nullptr;
};

class ProfileStore {
 public:
  // Opens (creating if needed) the database under `dir`.
  static absl::StatusOr<std::unique_ptr<ProfileStore>> Open(const std::string& dir,
                                                            const StoreOptions& options = StoreOptions());
  ~ProfileStore();
  ProfileStore(const ProfileStore&) = delete;
  ProfileStore& operator=(const ProfileStore&) = delete;

  // --- uploads ---
  // The record of `upload_id`, or nullopt if none is stored.
  absl::StatusOr<std::optional<v1::UploadRecord>> GetUpload(const std::string& upload_id);
  // Stores the record of a new or resumed upload.
  absl::Status PutUpload(const std::string& upload_id, const v1::UploadRecord& record);
  // Appends `bytes` at `offset` of the upload's raw data and advances received_bytes, in one
  // write. REQUIRES: offset == record.received_bytes.
  absl::Status AppendRaw(const std::string& upload_id, v1::UploadRecord& record,
                         std::string_view bytes);
  // Streams the raw bytes stored for `upload_id`, in order.
  std::unique_ptr<analysis::ByteSource> ReadRaw(const std::string& upload_id);
  // Deletes an uncommitted upload's record and raw bytes.
  absl::Status AbortUpload(const std::string& upload_id);
  // Aborts partial uploads not touched since `older_than_ns` (unix ns). Returns how many.
  absl::StatusOr<int> CleanStaleUploads(int64_t older_than_ns);

  // --- profiles ---
  // Makes a profile visible: info, summary, index entries and the upload's committed state
  // in one WriteBatch, so a profile is listed only when complete.
  absl::Status CommitProfile(const v1::ProfileInfo& info, const v1::ProfileSummary& summary);
  absl::StatusOr<v1::ProfileInfo> GetProfile(const std::string& profile_id);
  absl::StatusOr<v1::ProfileSummary> GetSummary(const std::string& profile_id);
  absl::StatusOr<ProfilePage> ListProfiles(const v1::ListProfilesRequest& request);
  // Deletes every record of the profile in one synced write: record, summary, index entries,
  // its upload (record and original bytes) and its event store; then compacts those ranges so
  // the disk is given back. NOT_FOUND when there is no such profile.
  absl::Status DeleteProfile(const std::string& profile_id);
  // Number of stored profiles and bytes on disk, for metrics.
  int64_t CountProfiles();
  int64_t DiskBytes();

  // --- event store (timeline/) ---
  // Writes a profile's event store in batches of a few MiB. The blocks stay invisible to
  // queries until CommitProfile lists the profile; DeleteTimeline drops them when it never
  // does, and DeleteOrphanTimelines after a crash.
  std::unique_ptr<timeline::TimelineWriter> NewTimelineWriter(const std::string& profile_id);
  std::unique_ptr<timeline::TimelineReader> NewTimelineReader(const std::string& profile_id);
  absl::Status DeleteTimeline(const std::string& profile_id);
  // Deletes the event stores of profiles that were never committed. Only at startup: an
  // ingest in flight writes its store before it commits.
  absl::StatusOr<int> DeleteOrphanTimelines();
  // Number of keys in the event store (tests: nothing left behind) and its bytes on disk.
  int64_t CountTimelineKeys();
  int64_t TimelineDiskBytes();
  int64_t RawDiskBytes();

  // --- agents ---
  absl::Status PutAgent(const v1::AgentInfo& agent);
  absl::StatusOr<std::vector<v1::AgentInfo>> ListAgents();

  // --- captures ---
  absl::Status PutCapture(const v1::Capture& capture);
  absl::StatusOr<v1::Capture> GetCapture(const std::string& capture_id);
  // Newest first (capture ids start with their creation time in hex).
  absl::StatusOr<std::vector<v1::Capture>> ListCaptures(const std::string& job, int limit);

  // Periodic captures (server/capture_scheduler.h), synced: a schedule survives a crash.
  absl::Status PutSchedule(const v1::Schedule& schedule);
  // NOT_FOUND when there is no such schedule.
  absl::Status DeleteSchedule(const std::string& schedule_id);
  absl::StatusOr<std::vector<v1::Schedule>> ListSchedules();

  // ---- Retention (server/retention.h) ----
  // Calls `visit` for every profile, oldest ingest first, until it returns false.
  absl::Status ForEachProfileOldestFirst(const std::function<bool(const v1::ProfileInfo&)>& visit);
  // Deletes the captures created before `created_before_ns`; returns how many.
  absl::StatusOr<int64_t> DeleteCapturesBefore(int64_t created_before_ns);
  absl::Status DeleteAgent(const std::string& node);
  // Bytes of every file under the database folder (tables, logs, manifest): its size on disk.
  int64_t FolderBytes() const;


  // Flushes memtables to disk (graceful shutdown; retention, so the logs they hold can go).
  absl::Status Flush();

  // --- health ---
  StoreHealth Health() const;
  // After a background error, asks RocksDB to resume writing: it works for a full disk once
  // space is freed; RocksDB deems other I/O errors of a flush fatal, and only a restart
  // recovers from those. Returns whether the store takes writes now.
  bool TryResume();
  // Records of agents, captures and schedules that did not parse, since the store opened
  // (each is also logged); profiles report theirs in ListProfiles.
  int64_t UnreadableRecords() const { return unreadable_records_.load(); }

 private:
  ProfileStore() = default;
  rocksdb::ColumnFamilyHandle* cf(int index) const { return handles_[index]; }

  // A record of `kind` at `key` did not parse: counted and logged.
  void ReportUnreadable(const char* kind, std::string_view key);

  std::shared_ptr<StoreHealthListener> health_;
  std::unique_ptr<rocksdb::DB> db_;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
  std::string dir_;
  std::atomic<int64_t> unreadable_records_{0};
};

}  // namespace fleetprof
