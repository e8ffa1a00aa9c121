#pragma once
// The temporal breakdown per device and the kernel breakdown (docs/analysis.md, Per-device
// temporal breakdown and Kernel breakdown), computed from device activity records.

#include <utility>
#include <vector>

#include "analysis/trace_events.h"
#include "analysis/trace_summary.h"

namespace fleetprof::analysis {

struct Interval {
  Ticks start;
  Ticks end;
};

// Sorts `intervals` and merges them into disjoint, ascending intervals (touching ones
// merge too). Empty intervals vanish.
void MergeIntervals(std::vector<Interval>* intervals);

// Length of the union of `intervals`; reorders them.
Ticks UnionLength(std::vector<Interval>* intervals);

// One entry per device with activity, sorted by device name.
std::vector<DeviceSummary> DeviceBreakdown(const TraceEvents& events);

// Activity grouped by exact name across devices; total_ns descending, then name.
std::vector<KernelSummary> KernelBreakdown(const TraceEvents& events);

}  // namespace fleetprof::analysis
