#pragma once
// Caches of what queries read back from the store.
//
// TimelineCache keeps the loaded directories and names of recently viewed profiles, so that panning and
// zooming read only blocks. Bounded by bytes; the least recently used goes first.

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/byte_lru.h"
#include "storage/storage.h"
#include "timeline/timeline.h"

namespace fleetprof {

class TimelineCache {
 public:
  TimelineCache(Storage* store, size_t max_bytes) : store_(store), cache_(max_bytes) {}

  // The profile's timeline; NOT_FOUND naming the profile when it has no stored events.
  absl::StatusOr<std::shared_ptr<const timeline::Timeline>> Get(const std::string& profile_id);
  // Forgets a profile (deleted).
  void Erase(const std::string& profile_id) { cache_.Erase(profile_id); }
  void Clear() { cache_.Clear(); }

 private:
  Storage* store_;
  ByteLru<timeline::Timeline> cache_;
};

// Keeps recently read summaries parsed (they never change once stored), so that job views,
// diffs and dashboards that poll read each one once. Bounded by bytes.
class SummaryCache {
 public:
  SummaryCache(Storage* store, size_t max_bytes) : store_(store), cache_(max_bytes) {}
  absl::StatusOr<std::shared_ptr<const v1::ProfileSummary>> Get(const std::string& profile_id) {
    return Get(profile_id, false);
  }
  // For a profile a job view's index scan has just listed (the record's existence is known).
  absl::StatusOr<std::shared_ptr<const v1::ProfileSummary>> GetListed(const std::string& profile_id) {
    return Get(profile_id, true);
  }
  void Insert(const std::string& profile_id, const v1::ProfileSummary& summary) {
    auto copy = std::make_shared<const v1::ProfileSummary>(summary);
    const size_t bytes = copy->SpaceUsedLong();
    cache_.Insert(profile_id, std::move(copy), bytes);
  }
  void Erase(const std::string& profile_id) { cache_.Erase(profile_id); }
  void Clear() { cache_.Clear(); }

 private:
  absl::StatusOr<std::shared_ptr<const v1::ProfileSummary>> Get(const std::string& profile_id, bool listed);

  Storage* store_;
  ByteLru<v1::ProfileSummary> cache_;
};

}  // namespace fleetprof
