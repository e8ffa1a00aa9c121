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

// Length of the part of the merged, sorted `busy` intervals inside [start, end).
Ticks OverlapLength(const std::vector<Interval>& busy, Ticks start, Ticks end) {
  auto it = std::upper_bound(busy.begin(), busy.end(), start,
                             [](Ticks t, const Interval& iv) { return t < iv.end; });
  Ticks total = 0;
  for (; it != busy.end() && it->start < end; ++it) {
    total += std::min(end, it->end) - std::max(start, it->start);
  }
  return total;
}

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

  std::vector<StepSummary> result;
  for (const auto& [step, span] : steps) {
    StepSummary s;
    s.step = step;
    s.start_ns = events.TimeNs(span.start);
    s.end_ns = events.TimeNs(span.end);
    s.duration_ns = s.end_ns - s.start_ns;
    s.device_busy_ns = events.DurationNs(OverlapLength(busy, span.start, span.end));
    s.device_idle_ns = s.duration_ns - s.device_busy_ns;
    result.push_back(s);
  }
  return result;
}

}  // namespace fleetprof::analysis
