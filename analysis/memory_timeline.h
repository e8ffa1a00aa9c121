#pragma once
// Allocated memory per device over time, from allocator samples: Kineto "[memory]"
// instants ("Total Allocated" when present, else a running sum of "Bytes"), or XSpace
// allocator events (bytes_allocated, analysis/xspace_memory.h).

#include <vector>

#include "analysis/trace_events.h"
#include "analysis/trace_summary.h"

namespace fleetprof::analysis {

// One entry per device, sorted by device; each timeline is reduced to at most
// kMaxMemoryTimelinePoints points by keeping the highest sample of each stretch, so the
// peak always survives.
std::vector<MemorySummary> MemoryBreakdown(const TraceEvents& events);

}  // namespace fleetprof::analysis
