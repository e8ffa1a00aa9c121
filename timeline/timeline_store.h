#pragma once
// What the event store of one profile needs from storage, and nothing more: the builder
// writes blocks, names and a directory; queries read them back. storage/ implements both
// over RocksDB (one key per block, all under the profile), tests over a map.

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace fleetprof::timeline {

class TimelineWriter {
 public:
  virtual ~TimelineWriter() = default;
  virtual absl::Status PutBlock(uint32_t track, uint32_t level, uint32_t block, std::string bytes) = 0;
  virtual absl::Status PutNames(uint32_t chunk, std::string bytes) = 0;
  // Written last: a timeline without its directory is not there.
  virtual absl::Status PutDirectory(std::string bytes) = 0;
};

class TimelineReader {
 public:
  virtual ~TimelineReader() = default;
  // NOT_FOUND when the key is absent.
  virtual absl::StatusOr<std::string> GetBlock(uint32_t track, uint32_t level, uint32_t block) = 0;
  virtual absl::StatusOr<std::string> GetNames(uint32_t chunk) = 0;
  virtual absl::StatusOr<std::string> GetDirectory() = 0;
};

}  // namespace fleetprof::timeline
