#pragma once
// The op breakdown, torch's key_averages() view (ANALYSIS.md, `ops[]`): host events nested
// per (pid, tid) by a stable sort and a stack walk, grouped by name, with the device time
// their runtime calls launched (joined on args.correlation).

#include <vector>

#include "analysis/trace_events.h"
#include "analysis/trace_summary.h"

namespace fleetprof::analysis {

// Rows sorted by self_ns descending, then name.
std::vector<OpSummary> OpBreakdown(const TraceEvents& events);

}  // namespace fleetprof::analysis
