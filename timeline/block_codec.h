#pragma once
// The bytes of one stored block: its events, sorted by start, as varints (start as the
// delta from the previous event's). Decoding checks every length: a damaged block is an
// error, never a read past its end.

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace fleetprof::timeline {

// One event as stored. Times are the trace's ticks.
struct TimelineEvent {
  // kHasBytes: a device event with its message size in `bytes` (collectives). Blocks written
  // before it existed never set it, so they read as before.
  enum Flags : uint8_t { kHasCorrelation = 1, kIsTotal = 2, kHasBytes = 4 };
  int64_t start = 0;
  int64_t dur = 0;
  int64_t correlation = 0;
  int64_t value = 0;  // counters: the total from `start` on
  int64_t bytes = 0;  // counters: the sample as recorded (total or change); device: message size
  uint32_t name = 0;
  uint32_t category = 0;
  uint8_t flags = 0;
  uint8_t kind = 0;  // analysis::ActivityKind of a device event

  bool has_correlation() const { return flags & kHasCorrelation; }
  bool has_bytes() const { return flags & kHasBytes; }
};

// Appends `events` (sorted by start) to `out`. `counter` blocks carry value and bytes.
void EncodeBlock(const std::vector<TimelineEvent>& events, bool counter, std::string* out);
// Replaces `events` with the block's; `names` bounds the name ids. With `stop_start`, the
// events from the first one starting at or after it on are left out, their bytes not read (nor
// checked): a window reads a block only up to its end. `declared`: how many events the block
// says it holds (all of `events` when none is left out).
absl::Status DecodeBlock(std::string_view bytes, bool counter, uint32_t names, std::vector<TimelineEvent>* events,
                         int64_t stop_start = std::numeric_limits<int64_t>::max(), uint64_t* declared = nullptr);

}  // namespace fleetprof::timeline
