#pragma once
// How the cluster's blobs look on object storage: every value is one zstd frame (level 1, with
// its content size and a checksum), since object stores compress nothing and PyTorch writes
// plain JSON; names become key words of unreserved characters only.

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace fleetprof::cluster {

std::string Compress(std::string_view bytes);
// The frame's bytes; DATA_LOSS when it is not one whole, intact frame of at most `max_bytes`.
absl::StatusOr<std::string> Decompress(std::string_view frame, int64_t max_bytes, std::string_view what);
// The content size a frame's header announces (its first 18 bytes are enough).
absl::StatusOr<int64_t> FrameContentSize(std::string_view frame_start);
// The bytes a frame header can take: what FrameContentSize needs to see.
constexpr int64_t kFrameHeaderMaxBytes = 18;

// [A-Za-z0-9-] stay, every other byte becomes "_hh": reversible, and never '/', '.' or empty.
std::string EncodeKeyWord(std::string_view name);
// False when `word` is not one EncodeKeyWord makes.
bool DecodeKeyWord(std::string_view word, std::string* name);

}  // namespace fleetprof::cluster
