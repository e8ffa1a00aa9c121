#include "analysis/step_breakdown.h"

#include <algorithm>
#include <map>

#include "analysis/decimal_time.h"
#include "analysis/device_breakdown.h"

namespace fleetprof::analysis {

bool ParseProfilerStepName(std::string_view name, int64_t* step) {
  constexpr std::string_view kPrefix = "ProfilerStep#";
  if (name.substr(0, kPrefix.size()) != kPrefix) return false;
  return ParseJsonInt64(name.substr(kPrefix.size()), step);
}

namespace {

// Busy time before any point, from the merged, sorted busy intervals: one binary search per
// query, so steps that all span the trace cost O((steps + intervals) log intervals), never
// steps x intervals.
class BusyPrefix {
 public:
  explicit BusyPrefix(std::vector<Interval> busy) : busy_(std::move(busy)) {
    before_.reserve(busy_.size() + 1);
    before_.push_back(0);
    for (const Interval& iv : busy_) before_.push_back(before_.back() + (iv.end - iv.start));
  }
  // Busy time in [start, end).
  Ticks Overlap(Ticks start, Ticks end) const { return Before(end) - Before(start); }

 private:
  // Busy time in (-inf, t). Merged intervals lie within one trace's span, so sums fit.
  Ticks Before(Ticks t) const {
    auto it = std::upper_bound(busy_.begin(), busy_.end(), t,
                               [](Ticks x, const Interval& iv) { return x < iv.end; });
    const size_t i = static_cast<size_t>(it - busy_.begin());  // intervals ending at or before t
    Ticks partial = it != busy_.end() && it->start < t ? t - it->start : 0;
    return before_[i] + partial;
  }

  std::vector<Interval> busy_;
  std::vector<Ticks> before_;  // before_[i]: busy time of intervals 0..i-1
};

}  // namespace

std::vector<StepSummary> StepBreakdown(const TraceEvents& events) {
  std::map<int64_t, Interval> steps;
  auto add = [&steps](int64_t step, Ticks start, Ticks dur) {
    auto [it, inserted] = steps.try_emplace(step, Interval{start, start + dur});
    if (!inserted) {
      it->second.start = std::min(it->second.start, start);
      it->second.end = std::max(it->second.end, start + dur);
    }
  };
  for (const StepEvent& s : events.steps) add(s.step, s.start, s.dur);
  if (!events.host.empty()) {
    // Decide once per distinct name rather than once per event.
    std::vector<int8_t> is_step(events.names.size(), -1);
    std::vector<int64_t> step_of(events.names.size(), 0);
    for (const HostEvent& h : events.host) {
      if (is_step[h.name] < 0) {
        is_step[h.name] = ParseProfilerStepName(events.names.Get(h.name), &step_of[h.name]);
      }
      if (is_step[h.name] == 1) add(step_of[h.name], h.start, h.dur);
    }
  }
  if (steps.empty()) return {};

  std::vector<Interval> busy;
  busy.reserve(events.activity.size());
  for (const DeviceActivity& a : events.activity) busy.push_back({a.start, a.start + a.dur});
  MergeIntervals(&busy);
  const BusyPrefix prefix(std::move(busy));

  std::vector<StepSummary> result;
  for (const auto& [step, span] : steps) {
    StepSummary s;
    s.step = step;
    s.start_ns = events.TimeNs(span.start);
    s.end_ns = events.TimeNs(span.end);
    s.duration_ns = s.end_ns - s.start_ns;
    s.device_busy_ns = events.DurationNs(prefix.Overlap(span.start, span.end));
    s.device_idle_ns = s.duration_ns - s.device_busy_ns;
    result.push_back(s);
  }
  return result;
}

}  // namespace fleetprof::analysis
