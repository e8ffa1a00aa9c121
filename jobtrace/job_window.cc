#include "jobtrace/job_window.h"

#include <algorithm>
#include <limits>

#include "analysis/trace_events.h"
#include "absl/strings/str_cat.h"
#include "timeline/trace_window.h"

namespace fleetprof::jobtrace {
namespace {

// Moves every time of a profile's track onto the reference clock.
void Shift(int64_t offset, v1::TraceTrack* track) {
  for (v1::TraceEvent& e : *track->mutable_events()) e.set_start_ns(e.start_ns() + offset);
  for (v1::MergedBlock& m : *track->mutable_merged()) {
    m.set_start_ns(m.start_ns() + offset);
    m.set_end_ns(m.end_ns() + offset);
  }
}

}  // namespace

std::pair<int64_t, int64_t> JobExtent(const std::vector<WindowMember>& members) {
  int64_t start = std::numeric_limits<int64_t>::max(), end = std::numeric_limits<int64_t>::min();
  for (const WindowMember& m : members) {
    if (m.timeline->tracks() == 0) continue;
    start = std::min(start, m.timeline->start_ns() + m.offset_ns);
    end = std::max(end, m.timeline->end_ns() + m.offset_ns);
  }
  if (start > end) return {0, 0};
  return {start, end};
}

absl::StatusOr<v1::JobTraceWindow> QueryJobWindow(const std::vector<WindowMember>& members,
                                                  const v1::JobTraceRequest& request) {
  v1::JobTraceWindow out;
  out.set_job(request.job());
  auto [extent_start, extent_end] = JobExtent(members);
  // Shifted by offsets of up to ±2^62 (analysis::kMaxAbsTicks), a bound past ±2^62 could overflow.
  for (int64_t bound : {request.start_ns(), request.end_ns()}) {
    if (!analysis::WithinTickBound(bound)) {
      return absl::InvalidArgumentError("start_ns and end_ns must lie within ±2^62 ns");
    }
  }
  const int64_t start = request.start_ns() != 0 ? request.start_ns() : extent_start;
  const int64_t end = request.end_ns() != 0 ? request.end_ns() : extent_end;
  if (start >= end) {
    if (request.start_ns() == 0 && request.end_ns() == 0) return out;  // no events anywhere
    return absl::InvalidArgumentError(absl::StrCat("empty window: start_ns ", start, " is not before end_ns ", end));
  }
  if (request.resolution_ns() < 0) return absl::InvalidArgumentError("resolution_ns must be >= 0");
  if (static_cast<__int128>(end) - start > std::numeric_limits<int64_t>::max()) {
    return absl::InvalidArgumentError("window too wide");
  }
  const int64_t resolution =
      request.resolution_ns() != 0 ? request.resolution_ns() : (end - start) / timeline::kDefaultWindowSteps;
  out.set_start_ns(start);
  out.set_end_ns(end);
  out.set_resolution_ns(resolution);
  std::vector<bool> track_found(static_cast<size_t>(request.tracks_size()), false);
  const int64_t share = std::max<int64_t>(
      timeline::kMaxEventsPerWindow / static_cast<int64_t>(std::max<size_t>(members.size(), 1)), 1);
  for (const WindowMember& m : members) {
    v1::TraceWindowRequest one;
    one.set_profile_id(m.profile_id);
    // Offsets and stored times lie within ±2^62 (analysis::kMaxAbsTicks): no overflow here.
    one.set_start_ns(start - m.offset_ns);
    one.set_end_ns(end - m.offset_ns);
    one.set_resolution_ns(resolution);
    for (int i = 0; i < request.tracks_size(); ++i) {
      if (m.timeline->FindTrack(request.tracks(i)) < 0) continue;
      track_found[static_cast<size_t>(i)] = true;
      one.add_tracks(request.tracks(i));
    }
    if (request.tracks_size() > 0 && one.tracks_size() == 0) continue;  // none of its tracks asked for
    one.set_search(request.search());
    one.set_args(request.args());
    one.set_max_events_per_track(request.max_events_per_track());
    absl::StatusOr<v1::TraceWindow> window = timeline::QueryTraceWindow(*m.timeline, *m.reader, one, share);
    if (!window.ok()) {
      return absl::Status(window.status().code(),
                          absl::StrCat("profile ", m.profile_id, " (rank ", m.rank, "): ", window.status().message()));
    }
    for (v1::TraceTrack& track : *window->mutable_tracks()) {
      Shift(m.offset_ns, &track);
      track.set_profile_id(m.profile_id);
      track.set_rank(m.rank);
      *out.add_tracks() = std::move(track);
    }
  }
  for (int i = 0; i < request.tracks_size(); ++i) {
    if (!track_found[static_cast<size_t>(i)]) {
      return absl::InvalidArgumentError(absl::StrCat("no track '", request.tracks(i), "' in any selected profile"));
    }
  }
  return out;
}

}  // namespace fleetprof::jobtrace
