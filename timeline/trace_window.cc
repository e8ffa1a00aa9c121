#include "timeline/trace_window.h"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "analysis/trace_summary.h"
#include "timeline/levels.h"

namespace fleetprof::timeline {
namespace {

constexpr size_t kMaxSearchBytes = 256;
constexpr int64_t kMaxBins = 1 << 16;
constexpr int64_t kFoldRunSteps = 4;

// Folds events shorter than the resolution into merged blocks: events (or whole stored
// blocks) land in bins of one resolution step; adjacent bins closer than a step join.
class Folder {
 public:
  Folder(int64_t start_ns, int64_t end_ns, int64_t resolution_ns)
      : start_(start_ns), step_(std::max<int64_t>(resolution_ns, 1)), per_step_(1.0 / static_cast<double>(step_)) {
    const int64_t span = end_ns - start_ns;
    use_bins_ = span / step_ < kMaxBins;
    if (use_bins_) bins_.resize(static_cast<size_t>(span / step_ + 1));
  }

  void Add(int64_t start, int64_t end, int64_t count, int64_t max_value) {
    Item item{start, std::max(start, end), count, max_value};
    if (!use_bins_) {
      items_.push_back(item);
      return;
    }
    // Bins only group events for drawing, so a multiplication does instead of a division.
    int64_t bin = start <= start_ ? 0 : static_cast<int64_t>(static_cast<double>(start - start_) * per_step_);
    bin = std::min<int64_t>(bin, static_cast<int64_t>(bins_.size()) - 1);
    Item& b = bins_[static_cast<size_t>(bin)];
    if (b.count == 0) {
      b = item;
    } else {
      b.start = std::min(b.start, item.start);
      b.end = std::max(b.end, item.end);
      b.count += item.count;
      b.max_value = std::max(b.max_value, item.max_value);
    }
  }

  // Items closer than this join into one merged block (Emit): any run of items each starting
  // less than this after the end of those before it folds into the same block as one item.
  int64_t join_gap_ns() const { return step_; }

  void Emit(bool counter, v1::TraceTrack* track) {
    std::vector<Item>& items = use_bins_ ? bins_ : items_;
    if (!use_bins_) {
      std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.start < b.start; });
    }
    v1::MergedBlock* last = nullptr;
    for (const Item& item : items) {
      if (item.count == 0) continue;
      if (last != nullptr && item.start < last->end_ns() + step_) {
        last->set_end_ns(std::max(last->end_ns(), item.end));
        last->set_count(last->count() + item.count);
        if (counter) last->set_max_value(std::max(last->max_value(), item.max_value));
        continue;
      }
      last = track->add_merged();
      last->set_start_ns(item.start);
      last->set_end_ns(item.end);
      last->set_count(item.count);
      if (counter) last->set_max_value(item.max_value);
    }
  }

 private:
  struct Item {
    int64_t start = 0, end = 0, count = 0, max_value = 0;
  };
  int64_t start_;
  int64_t step_;
  double per_step_;
  bool use_bins_ = false;
  std::vector<Item> bins_;
  std::vector<Item> items_;
};

struct Filter {
  std::string search_lower;
  bool has_correlation = false;
  int64_t correlation = 0;
  std::vector<int8_t> name_matches;  // by name id: -1 unknown

  bool active() const { return !search_lower.empty() || has_correlation; }
  bool Keep(const Timeline& t, const TimelineEvent& e) {
    if (has_correlation && !(e.has_correlation() && e.correlation == correlation)) return false;
    if (search_lower.empty()) return true;
    if (name_matches.empty()) name_matches.assign(t.names(), -1);
    int8_t& m = name_matches[e.name];
    if (m < 0) m = absl::StrContains(absl::AsciiStrToLower(std::string(t.name(e.name))), search_lower);
    return m == 1;
  }
};

const char* KindName(uint8_t kind) {
  return analysis::ActivityKindName(static_cast<analysis::ActivityKind>(kind));
}

void FillEvent(const Timeline& t, const v1::TimelineTrack& track, const TimelineEvent& e, bool args,
               v1::TraceEvent* out) {
  out->set_name(std::string(t.name(e.name)));
  out->set_start_ns(t.TimeNs(e.start));
  out->set_dur_ns(t.DurationNs(e.dur));
  const bool counter = track.kind() == "counter";
  if (e.has_correlation()) out->set_correlation(e.correlation);
  if (counter) out->set_value(e.value);
  if (!args) return;
  v1::TraceEventArgs* a = out->mutable_args();
  a->set_track(track.id());
  if (!counter) a->set_category(std::string(t.name(e.category)));
  if (track.kind() == "device") a->set_kind(KindName(e.kind));
  if (e.has_correlation()) a->set_correlation(e.correlation);
  if (counter || e.has_bytes()) a->set_bytes(e.bytes);
}

absl::Status CheckWindow(int64_t start, int64_t end) {
  if (start >= end) {
    return absl::InvalidArgumentError(
        absl::StrCat("empty window: start_ns ", start, " is not before end_ns ", end));
  }
  if (static_cast<__int128>(end) - start > std::numeric_limits<int64_t>::max()) {
    return absl::InvalidArgumentError("window too wide");
  }
  return absl::OkStatus();
}

// A window request checked, with its defaults filled in.
struct WindowSpec {
  int64_t start = 0;
  int64_t end = 0;
  int64_t resolution = 0;
  int64_t budget = 0;  // events listed per track
  bool args = false;
};

absl::StatusOr<WindowSpec> CheckWindowRequest(const Timeline& t, const v1::TraceWindowRequest& request) {
  WindowSpec spec;
  spec.start = request.start_ns() != 0 ? request.start_ns() : t.start_ns();
  spec.end = request.end_ns() != 0 ? request.end_ns() : t.end_ns();
  if (absl::Status s = CheckWindow(spec.start, spec.end); !s.ok()) return s;
  if (request.resolution_ns() < 0) return absl::InvalidArgumentError("resolution_ns must be >= 0");
  spec.resolution =
      request.resolution_ns() != 0 ? request.resolution_ns() : (spec.end - spec.start) / kDefaultWindowSteps;
  if (request.max_events_per_track() < 0 || request.max_events_per_track() > kMaxEventsPerTrack) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_events_per_track must be 0..", kMaxEventsPerTrack));
  }
  spec.budget = request.max_events_per_track() == 0 ? kDefaultEventsPerTrack : request.max_events_per_track();
  if (request.search().size() > kMaxSearchBytes) {
    return absl::InvalidArgumentError(absl::StrCat("search is longer than ", kMaxSearchBytes, " bytes"));
  }
  spec.args = request.args();
  return spec;
}

// The tracks the request names, in its order; every track when it names none.
absl::StatusOr<std::vector<uint32_t>> SelectTracks(const Timeline& t, const v1::TraceWindowRequest& request) {
  std::vector<uint32_t> tracks;
  if (request.tracks().empty()) {
    for (uint32_t i = 0; i < t.tracks(); ++i) tracks.push_back(i);
    return tracks;
  }
  for (const std::string& id : request.tracks()) {
    int index = t.FindTrack(id);
    if (index < 0) return absl::InvalidArgumentError(absl::StrCat("no track '", id, "' in this profile"));
    tracks.push_back(static_cast<uint32_t>(index));
  }
  return tracks;
}

Filter FilterOf(const v1::TraceWindowRequest& request) {
  Filter filter;
  filter.search_lower = absl::AsciiStrToLower(request.search());
  filter.has_correlation = request.has_correlation();
  filter.correlation = request.correlation();
  return filter;
}

// Fills the tracks of one window, one after the other. The events listed are bounded per
// track (the spec's budget) and for all tracks together (`max_window_events`), so the answer
// stays bounded whatever the number of tracks.
class WindowFiller {
 public:
  WindowFiller(const Timeline& t, TimelineReader& reader, const WindowSpec& spec, Filter filter,
               int64_t max_window_events)
      : t_(t), reader_(reader), spec_(spec), filter_(std::move(filter)), window_left_(max_window_events) {}

  absl::Status FillTrack(uint32_t ti, v1::TraceTrack* out);

 private:
  // One track's answer while its levels are read.
  struct TrackState {
    const v1::TimelineTrack& track;
    v1::TraceTrack* out;
    Folder folder;
    int64_t kept = 0;
    int64_t omitted = 0;
  };

  absl::Status ReadLevel(uint32_t ti, int li, TrackState& state);
  std::pair<uint32_t, uint32_t> FoldBlocksInside(uint32_t ti, int li, uint32_t first, uint32_t last,
                                                 Folder& folder);
  void AddEvent(const TimelineEvent& e, int64_t es, TrackState& state);

  const Timeline& t_;
  TimelineReader& reader_;
  const WindowSpec& spec_;
  Filter filter_;  // shared by the tracks: it remembers which names match
  int64_t window_left_;
  std::vector<TimelineEvent> events_;  // the block being read
};

absl::Status WindowFiller::FillTrack(uint32_t ti, v1::TraceTrack* out) {
  const v1::TimelineTrack& track = t_.track(ti);
  const bool counter = track.kind() == "counter";
  out->set_id(track.id());
  out->set_name(track.name());
  out->set_kind(track.kind());
  out->set_group(track.group());
  TrackState state{track, out, Folder(spec_.start, spec_.end, spec_.resolution)};
  // Longest events first, so a track over its budget keeps the ones that are visible.
  for (int li = track.levels_size() - 1; li >= 0; --li) {
    if (absl::Status s = ReadLevel(ti, li, state); !s.ok()) return s;
  }
  // Sorting the pointers, not the messages: a swap of two messages copies their fields.
  std::sort(out->mutable_events()->pointer_begin(), out->mutable_events()->pointer_end(),
            [](const v1::TraceEvent* a, const v1::TraceEvent* b) {
              return a->start_ns() < b->start_ns() || (a->start_ns() == b->start_ns() && a->dur_ns() > b->dur_ns());
            });
  state.folder.Emit(counter, out);
  out->set_truncated(state.omitted > 0);
  out->set_omitted_events(state.omitted);
  return absl::OkStatus();
}

absl::Status WindowFiller::ReadLevel(uint32_t ti, int li, TrackState& state) {
  const v1::TimelineLevel& level = state.track.levels(li);
  auto [first, last] = CandidateBlocks(t_, level, spec_.start, spec_.end);
  const int64_t start_ticks = t_.TicksAtOrAfter(spec_.start);
  const int64_t end_ticks = t_.TicksAtOrAfter(spec_.end);  // an event starting here is past the window
  auto [inside_first, inside_end] = FoldBlocksInside(ti, li, first, last, state.folder);
  for (uint32_t b = first; b < last; ++b) {
    if (b == inside_first && inside_end > inside_first) {  // folded already
      b = inside_end - 1;
      continue;
    }
    const v1::TimelineBlock& meta = level.blocks(static_cast<int>(b));
    if (meta.max_end() < start_ticks) continue;  // every event of the block ends before the window
    // Sorted by start: the events from the window's end on are not even decoded.
    if (absl::Status s = t_.ReadBlock(reader_, ti, li, b, &events_, end_ticks); !s.ok()) return s;
    for (const TimelineEvent& e : events_) AddEvent(e, t_.TimeNs(e.start), state);
  }
  return absl::OkStatus();
}

// Blocks whose every event starts inside the window all overlap it: when they are all
// shorter than the resolution, their counts fold without reading them. Returns the blocks
// folded, [first, end) of the level's; empty (both `last`) when none could be.
std::pair<uint32_t, uint32_t> WindowFiller::FoldBlocksInside(uint32_t ti, int li, uint32_t first, uint32_t last,
                                                             Folder& folder) {
  const v1::TimelineLevel& level = t_.track(ti).levels(li);
  // Ns durations of this level are below 4^(level+1); all folded when that is <= resolution.
  const bool all_short =
      level.level() + 1 < 32 && (int64_t{1} << (2 * (level.level() + 1))) <= spec_.resolution;
  if (!all_short || filter_.active()) return {last, last};
  const auto& blocks = level.blocks();
  const uint32_t inside_first = static_cast<uint32_t>(
      std::partition_point(blocks.begin() + first, blocks.begin() + last,
                           [&](const v1::TimelineBlock& b) { return t_.TimeNs(b.first_start()) < spec_.start; }) -
      blocks.begin());
  const uint32_t inside_end = static_cast<uint32_t>(
      std::partition_point(blocks.begin() + inside_first, blocks.begin() + last,
                           [&](const v1::TimelineBlock& b) { return t_.TimeNs(b.last_start()) < spec_.end; }) -
      blocks.begin());
  // Runs up to a few resolution steps long: a merged block is drawn a few pixels wide at
  // most, and a zoomed-out level costs hundreds of additions instead of one per block.
  // Runs without a gap of a step fold whole, however long: they join into one merged block.
  t_.FoldBlocks(ti, li, inside_first, inside_end, spec_.resolution * kFoldRunSteps, folder.join_gap_ns(),
                [&](const Timeline::Extent& e) { folder.Add(e.start_ns, e.end_ns, e.count, e.max_value); });
  return {inside_first, inside_end};
}

// An event of the window that starts at `es`: folded when shorter than the resolution, else
// listed while the budgets last, else counted as omitted.
void WindowFiller::AddEvent(const TimelineEvent& e, int64_t es, TrackState& state) {
  const int64_t ed = t_.DurationNs(e.dur);
  if (!Overlaps(es, ed, spec_.start, spec_.end) || !filter_.Keep(t_, e)) return;
  if (ed < spec_.resolution) {
    state.folder.Add(es, es + ed, 1, e.value);
  } else if (state.kept < spec_.budget && window_left_ > 0) {
    FillEvent(t_, state.track, e, spec_.args, state.out->add_events());
    ++state.kept;
    --window_left_;
  } else {
    ++state.omitted;
  }
}

}  // namespace

std::pair<uint32_t, uint32_t> CandidateBlocks(const Timeline& timeline, const v1::TimelineLevel& level,
                                              int64_t start_ns, int64_t end_ns) {
  const auto& blocks = level.blocks();
  const int64_t start_ticks = timeline.TicksAtOrAfter(start_ns);
  const int64_t end_ticks = timeline.TicksAtOrAfter(end_ns);
  // An overlapping event ends at or after start_ticks, so it starts at most max_dur before.
  const int64_t earliest = start_ticks < std::numeric_limits<int64_t>::min() + level.max_dur()
                               ? std::numeric_limits<int64_t>::min()
                               : start_ticks - level.max_dur();
  auto first = std::partition_point(blocks.begin(), blocks.end(),
                                    [&](const v1::TimelineBlock& b) { return b.last_start() < earliest; });
  auto last = std::partition_point(first, blocks.end(),
                                   [&](const v1::TimelineBlock& b) { return b.first_start() < end_ticks; });
  return {static_cast<uint32_t>(first - blocks.begin()), static_cast<uint32_t>(last - blocks.begin())};
}

absl::StatusOr<v1::TraceWindow> QueryTraceWindow(const Timeline& t, TimelineReader& reader,
                                                 const v1::TraceWindowRequest& request, int64_t max_window_events) {
  if (t.tracks() == 0 && request.start_ns() == 0 && request.end_ns() == 0) {
    return v1::TraceWindow();  // a trace without events: its whole window is empty, not an error
  }
  absl::StatusOr<WindowSpec> spec = CheckWindowRequest(t, request);
  if (!spec.ok()) return spec.status();
  absl::StatusOr<std::vector<uint32_t>> tracks = SelectTracks(t, request);
  if (!tracks.ok()) return tracks.status();
  v1::TraceWindow window;
  window.set_start_ns(spec->start);
  window.set_end_ns(spec->end);
  window.set_resolution_ns(spec->resolution);
  WindowFiller filler(t, reader, *spec, FilterOf(request), max_window_events);
  for (uint32_t ti : *tracks) {
    if (absl::Status s = filler.FillTrack(ti, window.add_tracks()); !s.ok()) return s;
  }
  return window;
}

absl::StatusOr<v1::RangeBreakdown> QueryRangeBreakdown(const Timeline& t, TimelineReader& reader,
                                                       const v1::RangeBreakdownRequest& request) {
  const int64_t start = request.start_ns() != 0 ? request.start_ns() : t.start_ns();
  const int64_t end = request.end_ns() != 0 ? request.end_ns() : t.end_ns();
  if (absl::Status s = CheckWindow(start, end); !s.ok()) return s;
  if (request.limit() < 0) return absl::InvalidArgumentError("limit must be >= 0");
  const size_t limit = request.limit() == 0 ? 50 : static_cast<size_t>(request.limit());
  struct Total {
    int64_t count = 0;
    int64_t ns = 0;
  };
  absl::flat_hash_map<uint32_t, Total> kernels, host;
  int64_t busy = 0;
  for (uint32_t ti = 0; ti < t.tracks(); ++ti) {
    const v1::TimelineTrack& track = t.track(ti);
    if (track.kind() == "counter") continue;
    auto& totals = track.kind() == "device" ? kernels : host;
    const bool device = track.kind() == "device";
    absl::Status s = ForEachOverlapping(t, reader, ti, start, end, [&](const TimelineEvent& e) {
      const int64_t es = t.TimeNs(e.start);
      const int64_t clipped = std::min(es + t.DurationNs(e.dur), end) - std::max(es, start);
      Total& total = totals[e.name];
      ++total.count;
      total.ns += std::max<int64_t>(clipped, 0);
      if (device) busy += std::max<int64_t>(clipped, 0);
    });
    if (!s.ok()) return s;
  }
  v1::RangeBreakdown out;
  out.set_start_ns(start);
  out.set_end_ns(end);
  out.set_device_busy_ns(busy);
  auto emit = [&](const absl::flat_hash_map<uint32_t, Total>& totals,
                  google::protobuf::RepeatedPtrField<v1::RangeRow>* rows) {
    std::vector<std::pair<uint32_t, Total>> sorted(totals.begin(), totals.end());
    std::sort(sorted.begin(), sorted.end(), [&](const auto& a, const auto& b) {
      if (a.second.ns != b.second.ns) return a.second.ns > b.second.ns;
      return t.name(a.first) < t.name(b.first);
    });
    for (size_t i = 0; i < sorted.size() && i < limit; ++i) {
      v1::RangeRow* row = rows->Add();
      row->set_name(std::string(t.name(sorted[i].first)));
      row->set_count(sorted[i].second.count);
      row->set_total_ns(sorted[i].second.ns);
    }
  };
  emit(kernels, out.mutable_kernels());
  emit(host, out.mutable_host());
  return out;
}

}  // namespace fleetprof::timeline
