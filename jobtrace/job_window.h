#pragma once
// A job's trace window: each selected profile's window (timeline/trace_window.h) taken on its
// own clock and moved onto the reference clock by its offset, tracks grouped by rank. Stored
// events are never rewritten: a window is read at [start - offset, end - offset) and every
// time it answers is shifted by +offset, so it equals that profile's own window, shifted.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "fleetprof/v1/query.pb.h"
#include "timeline/timeline.h"

namespace fleetprof::jobtrace {

struct WindowMember {
  std::string profile_id;
  std::string rank;
  const timeline::Timeline* timeline = nullptr;
  timeline::TimelineReader* reader = nullptr;
  int64_t offset_ns = 0;
};

// The members' extent on the reference clock: [min start + offset, max end + offset).
std::pair<int64_t, int64_t> JobExtent(const std::vector<WindowMember>& members);

// The window of `request` (reference clock; 0 bounds: JobExtent) over `members`, in their
// order. Each profile gets an equal share of the window's event budget. INVALID_ARGUMENT as a
// profile's window, and for a track id that no member has.
absl::StatusOr<v1::JobTraceWindow> QueryJobWindow(const std::vector<WindowMember>& members,
                                                  const v1::JobTraceRequest& request);

}  // namespace fleetprof::jobtrace
