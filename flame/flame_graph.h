#pragma once
// A call tree as Pyroscope's FlameGraph (docs/http-api.md, Flame graph layout): `names`, and per
// level, left to right, groups of 4 numbers: offset from the end of the previous node of the
// same level (whatever its parent), total, self, index into names. Level 0 is the root, named
// "total"; siblings are ordered by name; frames whose total is 0 are left out.

#include <string_view>

#include "absl/status/statusor.h"
#include "analysis/trace_summary.h"
#include "fleetprof/v1/query.pb.h"

namespace fleetprof::flame {

// Which of a frame's values the graph shows.
enum class FlameValue { kDeviceNs, kHostSelfNs, kCount };

// "device_ns" (or empty), "host_self_ns", "count"; anything else is INVALID_ARGUMENT.
absl::StatusOr<FlameValue> ParseFlameValue(std::string_view value);

// The sum of `value` over every frame of `tree`: the flame graph's total (saturating).
int64_t CallTreeTotal(const analysis::CallTree& tree, FlameValue value);

// REQUIRES: `tree` is in pre-order with depths as analysis::CallTree says (the codec checks
// stored trees). Totals saturate at the int64 range. With `max_nodes` > 0, only that many
// frames (the root included) are drawn, those with the largest totals (Pyroscope's maxNodes):
// a frame left out adds its total to its parent's self, so every total stays exact.
v1::FlameGraph RenderFlameGraph(const analysis::CallTree& tree, FlameValue value, int64_t max_nodes = 0);

}  // namespace fleetprof::flame
