#pragma once
// A call tree as a pprof profile (github.com/google/pprof's profile.proto, gzipped), the file
// `go tool pprof`, speedscope and Pyroscope's ingestion read. Sample types, in this order:
// count/count, host_self_time/nanoseconds, device_time/nanoseconds (the default). One sample per
// frame with a non-zero value, its stack the frame's path (leaf first, the root left out), its
// values the frame's own: so each type's sample total is the tree's total of that value.

#include <string>

#include "absl/status/statusor.h"
#include "analysis/trace_summary.h"

namespace fleetprof::flame {

// REQUIRES: `tree` in pre-order with depths (analysis::CallTree). INTERNAL if zlib fails.
absl::StatusOr<std::string> CallTreeToGzippedPprof(const analysis::CallTree& tree);

}  // namespace fleetprof::flame
