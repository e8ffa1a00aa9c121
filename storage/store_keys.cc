#include "storage/store_keys.h"

#include <limits>

namespace fleetprof::store_keys {

std::string BigEndian64(uint64_t v) {
  std::string out(8, '\0');
  for (int i = 7; i >= 0; --i) {
    out[i] = static_cast<char>(v & 0xff);
    v >>= 8;
  }
  return out;
}

std::string InvertedTime(int64_t t) {
  return BigEndian64(static_cast<uint64_t>(std::numeric_limits<int64_t>::max() - t));
}

std::string AllIndex(int64_t ingested_at_ns, std::string_view profile_id) {
  std::string key(kAllIndexPrefix);
  key += InvertedTime(ingested_at_ns);
  key += profile_id;
  return key;
}

std::string JobIndexPrefix(std::string_view job) {
  std::string key = "j/";
  key += job;
  key.push_back('\0');
  return key;
}

std::string JobIndex(std::string_view job, int64_t ingested_at_ns, std::string_view profile_id) {
  return JobIndexPrefix(job) + InvertedTime(ingested_at_ns) + std::string(profile_id);
}

std::string LabelIndexPrefix(std::string_view key, std::string_view value) {
  std::string out = "l/";
  out += key;
  out.push_back('=');
  out += value;
  out.push_back('\0');
  return out;
}

std::string LabelIndex(std::string_view key, std::string_view value, int64_t ingested_at_ns,
                       std::string_view profile_id) {
  return LabelIndexPrefix(key, value) + InvertedTime(ingested_at_ns) + std::string(profile_id);
}

std::string ProfileIdFromIndexKey(std::string_view key, size_t prefix_size) {
  if (key.size() < prefix_size + 8) return "";
  return std::string(key.substr(prefix_size + 8));
}

std::string RawPrefix(std::string_view upload_id) {
  std::string key(upload_id);
  key.push_back('\0');
  return key;
}

std::string RawKey(std::string_view upload_id, int64_t offset) {
  return RawPrefix(upload_id) + BigEndian64(static_cast<uint64_t>(offset));
}

int64_t RawOffset(std::string_view key, size_t prefix_size) {
  if (key.size() != prefix_size + 8) return -1;
  uint64_t v = 0;
  for (size_t i = prefix_size; i < key.size(); ++i) v = v << 8 | static_cast<unsigned char>(key[i]);
  return static_cast<int64_t>(v);
}

namespace {
void AppendBigEndian32(uint32_t v, std::string* out) {
  for (int shift = 24; shift >= 0; shift -= 8) out->push_back(static_cast<char>((v >> shift) & 0xff));
}
}  // namespace

std::string SegmentPrefix(std::string_view profile_id) {
  std::string key(profile_id);
  key.push_back('\0');
  return key;
}

std::string SegmentKey(std::string_view profile_id, std::string_view block_name) {
  std::string key = SegmentPrefix(profile_id);
  key.append(block_name);
  return key;
}

std::string TimelineBlockName(uint32_t track, uint32_t level, uint32_t block) {
  std::string name(1, 'b');
  AppendBigEndian32(track, &name);
  AppendBigEndian32(level, &name);
  AppendBigEndian32(block, &name);
  return name;
}

std::string TimelineNamesName(uint32_t chunk) {
  std::string name(1, 'n');
  AppendBigEndian32(chunk, &name);
  return name;
}

std::string ToHex(std::string_view bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

bool FromHex(std::string_view hex, std::string* bytes) {
  if (hex.size() % 2 != 0) return false;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  bytes->clear();
  for (size_t i = 0; i < hex.size(); i += 2) {
    int hi = nibble(hex[i]), lo = nibble(hex[i + 1]);
    if (hi < 0 || lo < 0) return false;
    bytes->push_back(static_cast<char>(hi << 4 | lo));
  }
  return true;
}

}  // namespace fleetprof::store_keys
