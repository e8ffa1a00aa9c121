#pragma once
// Writes a profile's stored events (all, or those overlapping a window) as Chrome-trace
// JSON that Perfetto, chrome://tracing and fleetprof itself open. Events keep the fields the
// analyses read (category, device, correlation, memory samples), so analysing an export
// gives the devices, kernels and ops of the original. Memory: one block per level of the
// track being written, and one output chunk.

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "analysis/byte_source.h"
#include "timeline/timeline.h"

namespace fleetprof::timeline {

// start_ns == end_ns == 0: the whole profile. The JSON is produced as it is read, about
// 1 MiB at a time. INVALID_ARGUMENT for an inverted window.
absl::StatusOr<std::unique_ptr<analysis::ByteSource>> ExportChromeTrace(
    std::shared_ptr<const Timeline> timeline, std::unique_ptr<TimelineReader> reader, int64_t start_ns,
    int64_t end_ns, std::string name);

}  // namespace fleetprof::timeline
