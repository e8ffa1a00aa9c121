#pragma once
// A profile's call tree (TraceSummary::call_tree), the data of its flame graph.
// - Host frames: host events nested per thread as the op breakdown nests them
//   (host_nesting.h), merged by name along the path from the root, so the same stack on two
//   threads is one frame; every ProfilerStep#N is the frame "ProfilerStep#*", so steps merge.
//   Python frames (python_function events) are host events like any other. A frame's
//   host_self_ns is its events' durations minus the union of their children's, a child clipped
//   to its parent (so never negative); count is the number of events at the frame.
// - Device leaves: each device activity under the frame of the runtime call that launched it
//   (the first runtime event with its args.correlation, in nesting order), in a leaf named after
//   the kernel (count: activities, device_ns: their time). Activities no runtime call launched
//   sit under one root-level frame, kUnlaunchedFrame.
// - XSpace (no host nesting): module -> op category -> op -> kernel, from the XLA op view's
//   groups (hlo_module, hlo_category, hlo_op; a level the trace lacks is left out; on TPU the
//   op's events are its own kernels). Device time of no XLA op sits under kNoXlaOpFrame. Only
//   kernel leaves count events there.
// Bounded: at most `max_nodes` frames (unless the kernel names alone need more): the lightest
// host subtrees (host self + device time) fold into a frame kOtherFrame under their parent,
// whose kernel leaves stay merged by name.
// Exact: the device_ns of a kernel's leaves add up to its kernels[] row's total_ns (XSpace ps
// are floored per row and the rounding spread over the leaves by largest remainder), their
// counts to its count, so the device total is the kernel table's. The host_self_ns total equals
// the op table's self_ns total always, not only when no op's self time is negative: both come to
// the durations of every thread's outermost events (a child that outlives its parent moves time
// from the parent's self to the child's in the op table, and is clipped here).

#include <cstdint>

#include "analysis/trace_events.h"
#include "analysis/trace_summary.h"

namespace fleetprof::analysis {

inline constexpr char kStepFrame[] = "ProfilerStep#*";
inline constexpr char kUnlaunchedFrame[] = "(device time without a launching call)";
inline constexpr char kNoXlaOpFrame[] = "(device time outside XLA ops)";
inline constexpr char kOtherFrame[] = "other";
inline constexpr char kRootFrame[] = "total";
inline constexpr int64_t kMaxCallTreeNodes = 2048;

CallTree BuildCallTree(const TraceEvents& events, int64_t max_nodes = kMaxCallTreeNodes);

// `tree` folded further, as above, to at most `max_nodes` frames; every total stays exact (ns
// are summed, never rounded again). The stored form uses it to stay within its share of the
// summary (proto/call_tree_codec.h).
CallTree FoldCallTree(const CallTree& tree, int64_t max_nodes);

}  // namespace fleetprof::analysis
