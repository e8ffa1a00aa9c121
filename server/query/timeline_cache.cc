#include "server/query/timeline_cache.h"

#include "absl/strings/str_cat.h"

namespace fleetprof {

absl::StatusOr<std::shared_ptr<const timeline::Timeline>> TimelineCache::Get(const std::string& profile_id) {
  if (auto cached = cache_.Find(profile_id)) return cached;
  // The record first: a deleted profile's blocks may linger in a replica's object cache.
  if (auto info = store_->profiles().Get(profile_id); !info.ok()) return info.status();
  // Loaded outside the lock: two first queries of one profile may both load it.
  std::unique_ptr<timeline::TimelineReader> reader = store_->events().NewReader(profile_id);
  absl::StatusOr<std::shared_ptr<const timeline::Timeline>> loaded = timeline::Timeline::Load(*reader);
  if (!loaded.ok()) {
    if (absl::IsNotFound(loaded.status())) {
      return absl::NotFoundError(absl::StrCat("profile ", profile_id,
                                              " has no stored events (ingested before the event store); "
                                              "upload its file again to view its trace"));
    }
    return loaded.status();
  }
  return cache_.Insert(profile_id, *loaded, (*loaded)->memory_bytes());
}

absl::StatusOr<std::shared_ptr<const v1::ProfileSummary>> SummaryCache::Get(const std::string& profile_id,
                                                                           bool listed) {
  if (auto cached = cache_.Find(profile_id)) return cached;
  auto summary = listed ? store_->profiles().GetListedSummary(profile_id) : store_->profiles().GetSummary(profile_id);
  if (!summary.ok()) return summary.status();
  auto parsed = std::make_shared<const v1::ProfileSummary>(*std::move(summary));
  const size_t bytes = parsed->SpaceUsedLong();
  return cache_.Insert(profile_id, std::move(parsed), bytes);
}

}  // namespace fleetprof
