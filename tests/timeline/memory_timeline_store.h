#pragma once
// The event store in a map: what the timeline tests write and read instead of RocksDB.

#include <map>
#include <string>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "timeline/timeline_store.h"

namespace fleetprof::timeline::testing {

class MemoryTimelineStore : public TimelineWriter, public TimelineReader {
 public:
  absl::Status PutBlock(uint32_t track, uint32_t level, uint32_t block, std::string bytes) override {
    blocks_[{track, level, block}] = std::move(bytes);
    return absl::OkStatus();
  }
  absl::Status PutNames(uint32_t chunk, std::string bytes) override {
    names_[chunk] = std::move(bytes);
    return absl::OkStatus();
  }
  absl::Status PutDirectory(std::string bytes) override {
    directory_ = std::move(bytes);
    return absl::OkStatus();
  }
  absl::StatusOr<std::string> GetBlock(uint32_t track, uint32_t level, uint32_t block) override {
    auto it = blocks_.find({track, level, block});
    if (it == blocks_.end()) return absl::NotFoundError(absl::StrCat("block ", track, "/", level, "/", block));
    return it->second;
  }
  absl::StatusOr<std::string> GetNames(uint32_t chunk) override {
    auto it = names_.find(chunk);
    if (it == names_.end()) return absl::NotFoundError("names");
    return it->second;
  }
  absl::StatusOr<std::string> GetDirectory() override {
    if (directory_.empty()) return absl::NotFoundError("directory");
    return directory_;
  }
  size_t blocks() const { return blocks_.size(); }

 private:
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, std::string> blocks_;
  std::map<uint32_t, std::string> names_;
  std::string directory_;
};

}  // namespace fleetprof::timeline::testing
