#pragma once
// Keeps the loaded directories and names of recently viewed profiles, so that panning and
// zooming read only blocks. Bounded by bytes; the least recently used goes first.

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "storage/profile_store.h"
#include "timeline/timeline.h"

namespace fleetprof {

class TimelineCache {
 public:
  TimelineCache(ProfileStore* store, size_t max_bytes) : store_(store), max_bytes_(max_bytes) {}

  // The profile's timeline; NOT_FOUND naming the profile when it has no stored events.
  absl::StatusOr<std::shared_ptr<const timeline::Timeline>> Get(const std::string& profile_id);
  // Forgets a profile (deleted).
  void Erase(const std::string& profile_id);

 private:
  struct Entry {
    std::string id;
    std::shared_ptr<const timeline::Timeline> timeline;
  };
  ProfileStore* store_;
  const size_t max_bytes_;
  std::mutex mu_;
  std::list<Entry> lru_;  // front: most recent
  absl::flat_hash_map<std::string, std::list<Entry>::iterator> by_id_;
  size_t bytes_ = 0;
};

}  // namespace fleetprof
