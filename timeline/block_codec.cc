#include "timeline/block_codec.h"

#include <limits>

namespace fleetprof::timeline {
namespace {

void PutVarint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

uint64_t ZigZag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
int64_t UnZigZag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

class Cursor {
 public:
  explicit Cursor(std::string_view bytes) : p_(bytes.data()), end_(bytes.data() + bytes.size()) {}
  bool Varint(uint64_t* v) {
    uint64_t result = 0;
    for (int shift = 0; shift < 64 && p_ < end_; shift += 7) {
      const uint8_t byte = static_cast<uint8_t>(*p_++);
      result |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if (!(byte & 0x80)) {
        *v = result;
        return true;
      }
    }
    return false;
  }
  bool Byte(uint8_t* b) {
    if (p_ >= end_) return false;
    *b = static_cast<uint8_t>(*p_++);
    return true;
  }
  bool AtEnd() const { return p_ == end_; }

 private:
  const char* p_;
  const char* end_;
};

}  // namespace

void EncodeBlock(const std::vector<TimelineEvent>& events, bool counter, std::string* out) {
  PutVarint(events.size(), out);
  int64_t previous = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    const TimelineEvent& e = events[i];
    // The first start in full (zigzag: traces may start before 0); then deltas, >= 0.
    PutVarint(i == 0 ? ZigZag(e.start) : static_cast<uint64_t>(e.start - previous), out);
    previous = e.start;
    PutVarint(static_cast<uint64_t>(e.dur), out);
    PutVarint(e.name, out);
    PutVarint(e.category, out);
    out->push_back(static_cast<char>(e.flags | (e.kind << 4)));
    if (e.has_correlation()) PutVarint(ZigZag(e.correlation), out);
    if (!counter && e.has_bytes()) PutVarint(ZigZag(e.bytes), out);
    if (counter) {
      PutVarint(ZigZag(e.value), out);
      PutVarint(ZigZag(e.bytes), out);
    }
  }
}

absl::Status DecodeBlock(std::string_view bytes, bool counter, uint32_t names, std::vector<TimelineEvent>* events,
                         int64_t stop_start, uint64_t* declared) {
  events->clear();
  Cursor in(bytes);
  const absl::Status damaged = absl::DataLossError("damaged event block");
  uint64_t count;
  // Each event takes at least 5 bytes, so a count beyond that is damage, not an allocation.
  if (!in.Varint(&count) || count > bytes.size() / 5 + 1) return damaged;
  if (declared != nullptr) *declared = count;
  events->resize(count);
  int64_t previous = 0;
  for (uint64_t i = 0; i < count; ++i) {
    TimelineEvent& e = (*events)[i];
    uint64_t start, dur, name, category, v;
    uint8_t flags;
    if (!in.Varint(&start) || !in.Varint(&dur) || !in.Varint(&name) || !in.Varint(&category) ||
        !in.Byte(&flags)) {
      return damaged;
    }
    if (i == 0) {
      e.start = UnZigZag(start);
    } else {
      // previous may be negative (the first start is zig-zag coded): add with a check, never
      // subtract from the maximum.
      if (start > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
          __builtin_add_overflow(previous, static_cast<int64_t>(start), &e.start)) {
        return damaged;
      }
    }
    previous = e.start;
    if (e.start >= stop_start) {  // sorted by start: the rest starts later still
      events->resize(i);
      return absl::OkStatus();
    }
    if (dur > static_cast<uint64_t>(std::numeric_limits<int64_t>::max() - (e.start > 0 ? e.start : 0)) ||
        name >= names || category >= names) {
      return damaged;
    }
    e.dur = static_cast<int64_t>(dur);
    e.name = static_cast<uint32_t>(name);
    e.category = static_cast<uint32_t>(category);
    e.flags = flags & 0x0f;
    e.kind = flags >> 4;
    if (e.has_correlation()) {
      if (!in.Varint(&v)) return damaged;
      e.correlation = UnZigZag(v);
    }
    if (!counter && e.has_bytes()) {
      if (!in.Varint(&v)) return damaged;
      e.bytes = UnZigZag(v);
    }
    if (counter) {
      if (!in.Varint(&v)) return damaged;
      e.value = UnZigZag(v);
      if (!in.Varint(&v)) return damaged;
      e.bytes = UnZigZag(v);
    }
  }
  if (!in.AtEnd()) return damaged;
  return absl::OkStatus();
}

}  // namespace fleetprof::timeline
