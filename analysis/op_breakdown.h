#pragma once
// The op breakdown, torch's key_averages() view (docs/analysis.md, Op breakdown): host events
// nested per (pid, tid) by a stable sort and a stack walk, grouped by name, with the device time
// their runtime calls launched (joined on args.correlation).

#include <vector>

#include "analysis/trace_events.h"
#include "analysis/trace_summary.h"

namespace fleetprof::analysis {

// Both views come from one walk; rows of each are sorted by self_ns descending, then name.
struct OpViews {
  std::vector<OpSummary> ops;
  // The scope view (`fleetprof diff --by scope`): every host event and every launched device
  // activity is booked to its innermost enclosing *scope*, a host event of category
  // `user_annotation` (record_function, named scopes) other than ProfilerStep#N; in traces of
  // PyTorch's legacy profiler, which have no categories, an event that is not a dispatcher op
  // (no "::"), a step or an autograd node (a TorchScript function's call is one too). A scope's row
  // has the count and total_ns of its own events, self_ns = the self time of the host events
  // booked to it (its own included), device_self_ns = the launched time of the runtime calls
  // booked to it, device_total_ns = the device_total_ns of its events (nested scopes included).
  // Work outside every scope is not in this view.
  std::vector<OpSummary> scopes;
};
OpViews OpAndScopeBreakdown(const TraceEvents& events);

// The ops view alone.
std::vector<OpSummary> OpBreakdown(const TraceEvents& events);

}  // namespace fleetprof::analysis
