#include "storage/event_store.h"

#include "storage/store_keys.h"

namespace fleetprof {
namespace {

namespace keys = store_keys;

class SegmentTimelineWriter : public timeline::TimelineWriter {
 public:
  explicit SegmentTimelineWriter(std::unique_ptr<SegmentWriter> segment) : segment_(std::move(segment)) {}
  absl::Status PutBlock(uint32_t track, uint32_t level, uint32_t block, std::string bytes) override {
    return segment_->Append(keys::TimelineBlockName(track, level, block), std::move(bytes));
  }
  absl::Status PutNames(uint32_t chunk, std::string bytes) override {
    return segment_->Append(keys::TimelineNamesName(chunk), std::move(bytes));
  }
  absl::Status PutDirectory(std::string bytes) override {
    if (absl::Status s = segment_->Append(keys::kTimelineDirectoryName, std::move(bytes)); !s.ok()) return s;
    return segment_->Finish();
  }

 private:
  std::unique_ptr<SegmentWriter> segment_;
};

class SegmentTimelineReader : public timeline::TimelineReader {
 public:
  explicit SegmentTimelineReader(std::unique_ptr<SegmentReader> segment) : segment_(std::move(segment)) {}
  absl::StatusOr<std::string> GetBlock(uint32_t track, uint32_t level, uint32_t block) override {
    return segment_->Read(keys::TimelineBlockName(track, level, block));
  }
  absl::StatusOr<std::string> GetNames(uint32_t chunk) override { return segment_->Read(keys::TimelineNamesName(chunk)); }
  absl::StatusOr<std::string> GetDirectory() override { return segment_->Read(keys::kTimelineDirectoryName); }

 private:
  std::unique_ptr<SegmentReader> segment_;
};

}  // namespace

std::unique_ptr<timeline::TimelineWriter> EventStore::NewWriter(const std::string& profile_id) {
  return std::make_unique<SegmentTimelineWriter>(blobs_->NewSegment(profile_id));
}

std::unique_ptr<timeline::TimelineReader> EventStore::NewReader(const std::string& profile_id) {
  return std::make_unique<SegmentTimelineReader>(blobs_->OpenSegment(profile_id));
}

}  // namespace fleetprof
