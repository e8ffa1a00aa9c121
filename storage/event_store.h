#pragma once
// A profile's event store (timeline/) as one segment of the blob store: blocks, name chunks
// and, last, the directory. The directory is what makes a timeline exist, so a segment whose
// writer died before it is never read as a timeline; Storage::CollectOrphans removes it.

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "storage/blob_store.h"
#include "timeline/timeline_store.h"

namespace fleetprof {

class EventStore {
 public:
  explicit EventStore(BlobStore* blobs) : blobs_(blobs) {}
  // Blocks stay invisible to queries until the profile is committed; Delete drops them when it
  // never is.
  std::unique_ptr<timeline::TimelineWriter> NewWriter(const std::string& profile_id);
  std::unique_ptr<timeline::TimelineReader> NewReader(const std::string& profile_id);
  absl::Status Delete(const std::string& profile_id, Reclaim reclaim = Reclaim::kLater) {
    return blobs_->DeleteSegment(profile_id, reclaim);
  }

 private:
  BlobStore* blobs_;
};

}  // namespace fleetprof
