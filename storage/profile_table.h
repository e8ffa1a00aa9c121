#pragma once
// Profiles: each one's record and index entries in the catalog, its summary as an object and its
// event store as a segment in the blob store. Commit writes the blobs first and makes the profile
// visible in one catalog commit; Delete hides it in one catalog commit, then removes the blobs.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/byte_lru.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "fleetprof/v1/profile.pb.h"
#include "fleetprof/v1/query.pb.h"
#include "fleetprof/v1/records.pb.h"
#include "storage/blob_store.h"
#include "storage/record_table.h"

namespace fleetprof {

// A stored record that does not parse (a bug or a damaged disk): reported, never skipped.
struct UnreadableRecord {
  std::string key;  // the profile id
  std::string error;
};

struct ProfilePage {
  std::vector<v1::ProfileInfo> profiles;
  std::string next_page_token;
  std::vector<UnreadableRecord> unreadable;  // index entries whose profile does not parse
};

class ProfileTable {
 public:
  ProfileTable(Catalog* catalog, BlobStore* blobs, UnreadableLog* unreadable)
      : catalog_(catalog),
        blobs_(blobs),
        unreadable_(unreadable),
        profiles_(catalog, CatalogTable::kProfiles, "profile", unreadable),
        uploads_(catalog, CatalogTable::kUploads, "upload", unreadable) {}

  // Makes its upload's bytes durable, stores the summary, then makes the profile visible in one synced catalog commit: record,
  // index entries and its upload marked committed, only if neither changed meanwhile (ABORTED
  // otherwise). The event store must be written before.
  absl::Status Commit(const v1::ProfileInfo& info, const v1::ProfileSummary& summary);
  absl::StatusOr<v1::ProfileInfo> Get(const std::string& profile_id) { return profiles_.Get(profile_id); }
  // NOT_FOUND unless the profile's record exists (its summary may outlive it in a cache).
  absl::StatusOr<v1::ProfileSummary> GetSummary(const std::string& profile_id);
  // The same for a profile an index scan (List) has just listed: no second catalog read.
  absl::StatusOr<v1::ProfileSummary> GetListedSummary(const std::string& profile_id);
  absl::StatusOr<ProfilePage> List(const v1::ListProfilesRequest& request);
  // Calls `visit` for every profile `filter` selects (job, labels, time bounds; its page fields
  // are ignored), newest ingest first, in one scan of the index List would use, until `visit`
  // fails. Records that do not parse are reported (UnreadableLog) and passed over.
  absl::Status ForEachListed(const v1::ListProfilesRequest& filter,
                             const std::function<absl::Status(const v1::ProfileInfo&)>& visit);
  // Deletes every record of the profile in one synced catalog commit (record, index entries,
  // its upload's record), then its summary, original bytes and event store, giving the disk
  // back. NOT_FOUND when there is no such profile.
  absl::Status Delete(const std::string& profile_id);
  // Calls `visit` for every profile, oldest ingest first, until it returns false.
  absl::Status ForEachOldestFirst(const std::function<bool(const v1::ProfileInfo&)>& visit);

 private:
  Catalog* catalog_;
  BlobStore* blobs_;
  UnreadableLog* unreadable_;
  RecordTable<v1::ProfileInfo> profiles_;
  RecordTable<v1::UploadRecord> uploads_;
  // The record of a profile an index scan just listed. Job views list thousands of profiles,
  // and a catalog read each (an etcd round trip in a cluster) made them slow; records are
  // written once (RequireAbsent) and ids never reused, and the index entry goes in the same
  // commit as the record, so a record kept here is never stale for an id a fresh scan lists.
  // Direct reads by id (Get) do not use it: only the index knows a profile still exists.
  absl::StatusOr<std::shared_ptr<const v1::ProfileInfo>> GetListed(const std::string& profile_id);
  static constexpr size_t kListedRecordBytes = 32 << 20;
  ByteLru<v1::ProfileInfo> listed_records_{kListedRecordBytes};
};

}  // namespace fleetprof
