#pragma once
// Helpers shared by the analysis tests: run the analysis on text held in memory, find rows
// by name, and build gzip streams.

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "analysis/trace_summary.h"

namespace fleetprof::analysis::testing {

// Analyses `text` as Chrome-trace JSON, delivered in reads of at most `chunk` bytes.
absl::StatusOr<TraceSummary> AnalyzeJson(const std::string& text, size_t chunk = SIZE_MAX);

// Analyses `bytes` as an XSpace protobuf.
absl::StatusOr<TraceSummary> AnalyzeXSpace(const std::string& bytes, size_t chunk = SIZE_MAX);

// Reads a whole file, gunzipping it when it is gzip.
std::string ReadDecompressed(const std::string& path);

// The row named `name`, or null.
const OpSummary* FindOp(const TraceSummary& summary, const std::string& name);
const KernelSummary* FindKernel(const TraceSummary& summary, const std::string& name);
const DeviceSummary* FindDevice(const TraceSummary& summary, const std::string& device);

// One gzip member holding `data` (zlib, default level).
std::string Gzip(const std::string& data);

// A Chrome-trace JSON document with `events` (comma-separated JSON objects) as traceEvents.
std::string TraceWithEvents(const std::string& events);

}  // namespace fleetprof::analysis::testing
