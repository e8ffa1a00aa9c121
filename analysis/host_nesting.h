#pragma once
// How host events nest (docs/analysis.md, Op breakdown, steps 1 and 2): per (pid, tid), sorted by
// start ascending, then duration descending, file order kept for equal (start, duration). The
// op breakdown and the call tree both walk this order, so they see the same parents.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "analysis/trace_events.h"

namespace fleetprof::analysis {

// Calls `visit(order, begin, end)` once per thread with host events, threads in the order of
// their interned names: order[begin, end) are that thread's indices into events.host, sorted.
void ForEachThreadInNestingOrder(
    const TraceEvents& events,
    const std::function<void(const std::vector<uint32_t>& order, size_t begin, size_t end)>& visit);

}  // namespace fleetprof::analysis
