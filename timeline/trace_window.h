#pragma once
// The trace-window query (docs/using.md, Trace viewer): every event of the window
// at or above the resolution exactly as in the trace, the shorter ones folded into merged
// blocks whose counts add up to the events folded, nothing dropped without saying so.
// Also the viewer's range selection: kernel and host totals clipped to a range.

#include "absl/status/statusor.h"
#include "fleetprof/v1/query.pb.h"
#include "timeline/timeline.h"

namespace fleetprof::timeline {

inline constexpr int kDefaultEventsPerTrack = 20000;
inline constexpr int kMaxEventsPerTrack = 100000;
// All tracks together: past this, every track's further events are left out (and counted).
inline constexpr int64_t kMaxEventsPerWindow = 500000;
inline constexpr int64_t kDefaultWindowSteps = 2000;  // default resolution: window / this

// INVALID_ARGUMENT for an empty or inverted window, a negative resolution, an unknown
// track or limits out of range. `max_window_events` bounds the events of all tracks together
// (a job's window gives each profile its share).
absl::StatusOr<v1::TraceWindow> QueryTraceWindow(const Timeline& timeline, TimelineReader& reader,
                                                 const v1::TraceWindowRequest& request,
                                                 int64_t max_window_events = kMaxEventsPerWindow);

absl::StatusOr<v1::RangeBreakdown> QueryRangeBreakdown(const Timeline& timeline, TimelineReader& reader,
                                                       const v1::RangeBreakdownRequest& request);

// Calls `visit(track, event)` for every event of `track` overlapping [start_ns, end_ns), in
// no particular order, reading every block that may hold one.
template <typename Visit>
absl::Status ForEachOverlapping(const Timeline& timeline, TimelineReader& reader, uint32_t track,
                                int64_t start_ns, int64_t end_ns, Visit&& visit);

// The blocks of a level that may hold an event overlapping [start_ns, end_ns): [first, end).
std::pair<uint32_t, uint32_t> CandidateBlocks(const Timeline& timeline, const v1::TimelineLevel& level,
                                              int64_t start_ns, int64_t end_ns);

template <typename Visit>
absl::Status ForEachOverlapping(const Timeline& timeline, TimelineReader& reader, uint32_t track,
                                int64_t start_ns, int64_t end_ns, Visit&& visit) {
  const v1::TimelineTrack& t = timeline.track(track);
  std::vector<TimelineEvent> events;
  for (int li = 0; li < t.levels_size(); ++li) {
    auto [first, end] = CandidateBlocks(timeline, t.levels(li), start_ns, end_ns);
    const int64_t start_ticks = timeline.TicksAtOrAfter(start_ns);
    for (uint32_t b = first; b < end; ++b) {
      if (t.levels(li).blocks(static_cast<int>(b)).max_end() < start_ticks) continue;
      if (absl::Status s = timeline.ReadBlock(reader, track, li, b, &events); !s.ok()) return s;
      for (const TimelineEvent& e : events) {
        if (Overlaps(timeline.TimeNs(e.start), timeline.DurationNs(e.dur), start_ns, end_ns)) visit(e);
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace fleetprof::timeline
