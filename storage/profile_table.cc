#include "storage/profile_table.h"

#include <algorithm>
#include <limits>
#include <map>

#include "storage/store_keys.h"

namespace fleetprof {
namespace {

namespace keys = store_keys;

// Every index entry of a profile: all profiles, its job, each label.
std::vector<std::string> IndexKeys(const v1::ProfileInfo& info) {
  const std::string& id = info.profile_id();
  const int64_t t = info.ingested_at_ns();
  std::vector<std::string> out = {keys::AllIndex(t, id), keys::JobIndex(info.job(), t, id)};
  for (const auto& [key, value] : info.labels()) out.push_back(keys::LabelIndex(key, value, t, id));
  return out;
}

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

// The most selective index for `request`; every other condition is checked on the record.
CatalogScan IndexScanFor(const v1::ListProfilesRequest& request) {
  CatalogScan scan;
  scan.prefix = std::string(keys::kAllIndexPrefix);
  if (!request.job().empty()) {
    scan.prefix = keys::JobIndexPrefix(request.job());
  } else if (!request.labels().empty()) {
    // Protobuf map order varies between messages; page 2 must pick the same index as page 1.
    std::map<std::string, std::string> sorted(request.labels().begin(), request.labels().end());
    scan.prefix = keys::LabelIndexPrefix(sorted.begin()->first, sorted.begin()->second);
  }
  return scan;
}

}  // namespace

absl::Status ProfileTable::Commit(const v1::ProfileInfo& info, const v1::ProfileSummary& summary) {
  const std::string& id = info.profile_id();
  if (!info.upload_id().empty()) {
    if (absl::Status s = blobs_->FinishParts(info.upload_id()); !s.ok()) return s;
  }
  if (absl::Status s = blobs_->PutObject(id, summary.SerializeAsString()); !s.ok()) return s;
  CatalogWrite write;
  write.sync = true;  // a committed profile survives a crash
  write.RequireAbsent(CatalogTable::kProfiles, id);
  profiles_.Put(write, id, info);
  for (std::string& key : IndexKeys(info)) write.Put(CatalogTable::kIndex, std::move(key), "");
  if (!info.upload_id().empty()) {
    auto stored = catalog_->Get(CatalogTable::kUploads, info.upload_id());
    if (!stored.ok()) return stored.status();
    v1::UploadRecord committed;
    if (stored->has_value()) {
      if (!committed.ParseFromString(**stored)) {
        return absl::DataLossError("upload " + info.upload_id() + ": stored record does not parse");
      }
      write.RequireValue(CatalogTable::kUploads, info.upload_id(), **stored);
    } else {
      write.RequireAbsent(CatalogTable::kUploads, info.upload_id());
    }
    committed.set_profile_id(id);
    committed.set_updated_at_ns(info.ingested_at_ns());
    uploads_.Put(write, info.upload_id(), committed);
  }
  return catalog_->Commit(write);
}

absl::StatusOr<v1::ProfileSummary> ProfileTable::GetSummary(const std::string& profile_id) {
  // A summary exists for readers only while its profile's record does: a deleted profile's
  // summary may linger (a replica's object cache, a collection not yet run).
  auto record = catalog_->Get(CatalogTable::kProfiles, profile_id);
  if (!record.ok()) return record.status();
  if (!record->has_value()) return absl::NotFoundError("profile " + profile_id + ": not found");
  return GetListedSummary(profile_id);
}

absl::StatusOr<v1::ProfileSummary> ProfileTable::GetListedSummary(const std::string& profile_id) {
  auto bytes = blobs_->GetObject(profile_id);
  if (absl::IsNotFound(bytes.status())) return absl::NotFoundError("profile " + profile_id + ": not found");
  if (!bytes.ok()) return bytes.status();
  v1::ProfileSummary summary;
  if (!summary.ParseFromString(*bytes)) {
    return absl::DataLossError("profile " + profile_id + ": stored summary does not parse");
  }
  return summary;
}

absl::Status ProfileTable::Delete(const std::string& profile_id) {
  auto info = Get(profile_id);
  if (!info.ok()) return info.status();
  CatalogWrite write;
  write.sync = true;
  write.Delete(CatalogTable::kProfiles, profile_id);
  for (std::string& key : IndexKeys(*info)) write.Delete(CatalogTable::kIndex, std::move(key));
  if (!info->upload_id().empty()) write.Delete(CatalogTable::kUploads, info->upload_id());
  if (absl::Status s = catalog_->Commit(write); !s.ok()) return s;
  // Invisible now; a crash before the blobs are gone leaves orphans for CollectOrphans.
  if (absl::Status s = blobs_->DeleteObject(profile_id); !s.ok()) return s;
  if (absl::Status s = blobs_->DeleteSegment(profile_id, Reclaim::kNow); !s.ok()) return s;
  if (!info->upload_id().empty()) return blobs_->DeleteParts(info->upload_id(), Reclaim::kNow);
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const v1::ProfileInfo>> ProfileTable::GetListed(const std::string& profile_id) {
  if (auto kept = listed_records_.Find(profile_id)) return kept;
  auto info = profiles_.Get(profile_id);
  if (!info.ok()) return info.status();
  const size_t bytes = info->SpaceUsedLong() + profile_id.size();
  return listed_records_.Insert(profile_id, std::make_shared<const v1::ProfileInfo>(*std::move(info)), bytes);
}

absl::StatusOr<ProfilePage> ProfileTable::List(const v1::ListProfilesRequest& request) {
  CatalogScan scan = IndexScanFor(request);
  const size_t page_size = request.page_size() <= 0 ? 100 : std::min(request.page_size(), 1000);
  if (!request.page_token().empty() &&
      (!keys::FromHex(request.page_token(), &scan.after) || !scan.after.starts_with(scan.prefix))) {
    return absl::InvalidArgumentError("page_token does not belong to this query");
  }

  scan.expected_keys = static_cast<int64_t>(page_size) + 1;  // the page, and whether more follow
  ProfilePage page;
  std::string last;  // the index key of the page's last profile
  absl::Status s = catalog_->Scan(CatalogTable::kIndex, scan, [&](std::string_view key, std::string_view) {
    if (page.profiles.size() == page_size) {
      page.next_page_token = keys::ToHex(last);  // there is more after the full page
      return false;
    }
    const std::string id = keys::ProfileIdFromIndexKey(key, scan.prefix.size());
    auto info = GetListed(id);
    if (absl::IsNotFound(info.status())) return true;  // deleted meanwhile: never half-visible
    if (!info.ok()) {
      page.unreadable.push_back(UnreadableRecord{id, std::string(info.status().message())});
      return true;
    }
    if (!Matches(**info, request)) return true;
    page.profiles.push_back(**info);
    last = std::string(key);
    return true;
  });
  if (!s.ok()) return s;
  return page;
}

absl::Status ProfileTable::ForEachListed(const v1::ListProfilesRequest& filter,
                                         const std::function<absl::Status(const v1::ProfileInfo&)>& visit) {
  CatalogScan scan = IndexScanFor(filter);
  scan.expected_keys = std::numeric_limits<int64_t>::max();  // the whole selection
  absl::Status failed;
  absl::Status s = catalog_->Scan(CatalogTable::kIndex, scan, [&](std::string_view key, std::string_view) {
    const std::string id = keys::ProfileIdFromIndexKey(key, scan.prefix.size());
    auto info = GetListed(id);
    if (absl::IsNotFound(info.status())) return true;  // deleted meanwhile: never half-visible
    if (absl::IsDataLoss(info.status())) {
      unreadable_->Report("profile", id);
      return true;
    }
    if (!info.ok()) {
      failed = info.status();
      return false;
    }
    if (!Matches(**info, filter)) return true;
    failed = visit(**info);
    return failed.ok();
  });
  return s.ok() ? failed : s;
}

absl::Status ProfileTable::ForEachOldestFirst(const std::function<bool(const v1::ProfileInfo&)>& visit) {
  // The all-profiles index is newest first: walk it backwards.
  CatalogScan oldest_first;
  oldest_first.prefix = std::string(keys::kAllIndexPrefix);
  oldest_first.reverse = true;
  absl::Status lookup;
  absl::Status s = catalog_->Scan(CatalogTable::kIndex, oldest_first, [&](std::string_view key, std::string_view) {
    const std::string id = keys::ProfileIdFromIndexKey(key, keys::kAllIndexPrefix.size());
    auto info = Get(id);
    if (absl::IsNotFound(info.status())) return true;  // deleted meanwhile
    if (absl::IsDataLoss(info.status())) {
      unreadable_->Report("profile", id);
      return true;
    }
    if (!info.ok()) {
      lookup = info.status();
      return false;
    }
    return visit(*info);
  });
  if (!s.ok()) return s;
  return lookup;
}

}  // namespace fleetprof
