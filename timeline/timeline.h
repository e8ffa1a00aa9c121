#pragma once
// One profile's event store as queries see it: the directory (tracks, levels, block
// extents) and the interned names, loaded once and shared by every query of the profile.
// Blocks themselves are read per query through TimelineReader.

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "fleetprof/v1/records.pb.h"
#include "timeline/block_codec.h"
#include "timeline/timeline_store.h"

namespace fleetprof::timeline {

class Timeline {
 public:
  static absl::StatusOr<std::shared_ptr<const Timeline>> Load(TimelineReader& reader);

  const v1::TimelineDirectory& directory() const { return directory_; }
  const v1::TimelineTrack& track(uint32_t i) const { return directory_.tracks(static_cast<int>(i)); }
  uint32_t tracks() const { return static_cast<uint32_t>(directory_.tracks_size()); }
  // Index of the track with id `id`, or -1.
  int FindTrack(std::string_view id) const;
  std::string_view name(uint32_t id) const { return names_[id]; }
  uint32_t names() const { return static_cast<uint32_t>(names_.size()); }
  // The extent of every event, in ns: [start_ns, end_ns), end past the last instant.
  int64_t start_ns() const { return start_ns_; }
  int64_t end_ns() const { return end_ns_; }
  // What this object holds, for the server's cache bound.
  size_t memory_bytes() const { return memory_bytes_; }

  // Ticks to the trace's ns clock (floor), as the analysis reports them.
  int64_t TimeNs(int64_t ticks) const { return base_ns_ + DurationNs(ticks); }
  int64_t DurationNs(int64_t ticks) const {
    if (ticks_per_ns_ == 1) return ticks;  // Chrome-trace JSON: no division on the hot path
    int64_t q = ticks / ticks_per_ns_;
    return (ticks % ticks_per_ns_ != 0 && ticks < 0) ? q - 1 : q;
  }
  // The first tick whose TimeNs is >= ns, saturated to the int64 range.
  int64_t TicksAtOrAfter(int64_t ns) const;

  // A run of stored blocks as one extent (ns): what a zoomed-out window folds without reading.
  struct Extent {
    int64_t start_ns = 0;
    int64_t end_ns = 0;
    int64_t count = 0;
    int64_t max_value = 0;
    // The widest gap inside the run: the most any block starts after the end of the blocks
    // before it in the run (at most that: each part's own gaps are measured within the part).
    // A single block has none (INT64_MIN).
    int64_t max_gap_ns = std::numeric_limits<int64_t>::min();
  };
  // Calls `add(extent)` for runs of the blocks [first, end) of a level, each run as long as
  // possible with an extent of at most `max_span_ns` (a single block may be longer), or with
  // every gap inside it under `join_gap_ns`: merged blocks join what lies closer than that
  // (trace_window.cc), so such a run folds into the same merged block as its parts would,
  // and a level without wide gaps costs a few calls whatever its length. Runs of 4^k blocks
  // are precomputed; without gaps to join, a whole zoomed-out level costs a few hundred calls
  // (one per max_span_ns, at most 4^k blocks each).
  template <typename Add>
  void FoldBlocks(uint32_t track, int level_index, uint32_t first, uint32_t end, int64_t max_span_ns,
                  int64_t join_gap_ns, Add&& add) const;

  // The events of block `block` of `level_index` (an index into track.levels()); with
  // `stop_start` (ticks) only those that start before it (DecodeBlock).
  absl::Status ReadBlock(TimelineReader& reader, uint32_t track, int level_index, uint32_t block,
                         std::vector<TimelineEvent>* events,
                         int64_t stop_start = std::numeric_limits<int64_t>::max()) const;

 private:
  Timeline() = default;

  // runs_[track][level_index][k][i]: blocks [i * 4^k, (i + 1) * 4^k) of that level, k >= 0.
  std::vector<std::vector<std::vector<std::vector<Extent>>>> runs_;
  v1::TimelineDirectory directory_;
  std::vector<std::string> names_;
  absl::flat_hash_map<std::string, int> track_by_id_;
  int64_t base_ns_ = 0;
  int64_t ticks_per_ns_ = 1;
  int64_t start_ns_ = 0;
  int64_t end_ns_ = 0;
  size_t memory_bytes_ = 0;
};

template <typename Add>
void Timeline::FoldBlocks(uint32_t track, int level_index, uint32_t first, uint32_t end, int64_t max_span_ns,
                          int64_t join_gap_ns, Add&& add) const {
  const auto& runs = runs_[track][static_cast<size_t>(level_index)];
  uint32_t i = first;
  while (i < end) {
    // The largest aligned run starting at i that fits in [i, end), and in max_span_ns or
    // without a gap of join_gap_ns. (A run failing both has a parent failing both.)
    size_t k = 0;
    while (k + 1 < runs.size()) {
      const uint32_t size = uint32_t{1} << (2 * (k + 1));
      if (i % size != 0 || i + size > end) break;
      const Extent& e = runs[k + 1][i / size];
      if (e.end_ns - e.start_ns > max_span_ns && e.max_gap_ns >= join_gap_ns) break;
      ++k;
    }
    add(runs[k][i >> (2 * k)]);
    i += uint32_t{1} << (2 * k);
  }
}

// An event overlaps [start, end) when it starts before `end` and ends after `start`; an
// instant (dur 0) when start <= its time < end.
inline bool Overlaps(int64_t event_start, int64_t event_dur, int64_t start, int64_t end) {
  return event_start < end && (event_start + event_dur > start || event_start >= start);
}

}  // namespace fleetprof::timeline
