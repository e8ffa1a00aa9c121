#pragma once
// The call tree's stored form (fleetprof.v1.CallTree inside a ProfileSummary) and back. Unlike
// the rest of the summary it is read back into analysis::CallTree: it is stored by reference
// into the summary's op and kernel rows (a frame's name is mostly an op's or a kernel's), and the
// flame graph and pprof export want names, not references.

#include "absl/status/statusor.h"
#include "analysis/trace_summary.h"
#include "fleetprof/v1/profile.pb.h"

namespace fleetprof {

// Stores `tree` in summary->call_tree, by reference to summary's ops and kernels (filled first).
// The tree is folded (analysis::FoldCallTree, totals exact) until it adds at most
// kCallTreeSharePercent to the summary's size, or cannot fold further (a tree keeps one leaf per
// kernel name, so a summary of many kernels and little else may exceed it).
void CallTreeToProto(const analysis::CallTree& tree, v1::ProfileSummary* summary);
inline constexpr size_t kCallTreeSharePercent = 10;

// The call tree of `summary`. NOT_FOUND when it has none (stored before trees existed);
// DATA_LOSS when the stored arrays do not form a tree (different lengths, a name reference out of
// range, a depth that skips a level).
absl::StatusOr<analysis::CallTree> CallTreeFromProto(const v1::ProfileSummary& summary);

}  // namespace fleetprof
