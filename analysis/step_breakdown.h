#pragma once
// Training steps and the device time inside them: Kineto's ProfilerStep#N host events and
// XSpace Steps-line events, merged by step number (earliest start, latest end), each with
// the union of all device activity (all devices) that falls inside it.

#include <vector>

#include "analysis/trace_events.h"
#include "analysis/trace_summary.h"

namespace fleetprof::analysis {

// Sorted by step number.
std::vector<StepSummary> StepBreakdown(const TraceEvents& events);

// The N of "ProfilerStep#N", or false for other names.
bool ParseProfilerStepName(std::string_view name, int64_t* step);

}  // namespace fleetprof::analysis
