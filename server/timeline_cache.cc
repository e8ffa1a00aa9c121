#include "server/timeline_cache.h"

#include "absl/strings/str_cat.h"

namespace fleetprof {

absl::StatusOr<std::shared_ptr<const timeline::Timeline>> TimelineCache::Get(const std::string& profile_id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = by_id_.find(profile_id); it != by_id_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      return it->second->timeline;
    }
  }
  // Loaded outside the lock: two first queries of one profile may both load it.
  std::unique_ptr<timeline::TimelineReader> reader = store_->NewTimelineReader(profile_id);
  absl::StatusOr<std::shared_ptr<const timeline::Timeline>> loaded = timeline::Timeline::Load(*reader);
  if (!loaded.ok()) {
    if (absl::IsNotFound(loaded.status())) {
      if (auto info = store_->GetProfile(profile_id); !info.ok()) return info.status();
      return absl::NotFoundError(absl::StrCat("profile ", profile_id,
                                              " has no stored events (ingested before the event store); "
                                              "upload its file again to view its trace"));
    }
    return loaded.status();
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (by_id_.contains(profile_id)) return by_id_[profile_id]->timeline;
  lru_.push_front(Entry{profile_id, *loaded});
  by_id_[profile_id] = lru_.begin();
  bytes_ += (*loaded)->memory_bytes();
  while (bytes_ > max_bytes_ && lru_.size() > 1) {
    bytes_ -= lru_.back().timeline->memory_bytes();
    by_id_.erase(lru_.back().id);
    lru_.pop_back();
  }
  return *loaded;
}

void TimelineCache::Erase(const std::string& profile_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_id_.find(profile_id);
  if (it == by_id_.end()) return;
  bytes_ -= it->second->timeline->memory_bytes();
  lru_.erase(it->second);
  by_id_.erase(it);
}

}  // namespace fleetprof
