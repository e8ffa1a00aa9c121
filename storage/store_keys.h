#pragma once
// Key encodings of the embedded engine (see storage.h for the layout). Only the storage
// module includes this file.

#include <cstdint>
#include <string>
#include <string_view>

namespace fleetprof::store_keys {

// Big-endian bytes of INT64_MAX - t: ascending key order = descending time.
std::string InvertedTime(int64_t t);
std::string BigEndian64(uint64_t v);

std::string AllIndex(int64_t ingested_at_ns, std::string_view profile_id);
std::string JobIndexPrefix(std::string_view job);
std::string JobIndex(std::string_view job, int64_t ingested_at_ns, std::string_view profile_id);
std::string LabelIndexPrefix(std::string_view key, std::string_view value);
std::string LabelIndex(std::string_view key, std::string_view value, int64_t ingested_at_ns,
                       std::string_view profile_id);
inline constexpr std::string_view kAllIndexPrefix = "t/";
// The profile id that ends every index key (it follows the 8 time bytes).
std::string ProfileIdFromIndexKey(std::string_view key, size_t prefix_size);

std::string RawPrefix(std::string_view upload_id);
std::string RawKey(std::string_view upload_id, int64_t offset);
// The offset of a raw key whose prefix (RawPrefix) is `prefix_size` long; -1 when malformed.
int64_t RawOffset(std::string_view key, size_t prefix_size);

// Event segment of a profile in the embedded engine: profile_id \0 then the block's name. Every
// key of a segment starts with SegmentPrefix.
std::string SegmentPrefix(std::string_view profile_id);
std::string SegmentKey(std::string_view profile_id, std::string_view block_name);

// Block names within a profile's event segment: 'b' track level block (each be32), 'n' chunk,
// or 'd' for the directory.
std::string TimelineBlockName(uint32_t track, uint32_t level, uint32_t block);
std::string TimelineNamesName(uint32_t chunk);
inline constexpr std::string_view kTimelineDirectoryName = "d";

// Hex for page tokens, which must be printable.
std::string ToHex(std::string_view bytes);
bool FromHex(std::string_view hex, std::string* bytes);

}  // namespace fleetprof::store_keys
