#pragma once
// Entry point of the analysis library: reads one trace as a stream and computes its summary.

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "analysis/byte_source.h"
#include "analysis/trace_summary.h"

namespace fleetprof::analysis {

// Guesses the format from the file name (".xplane.pb" => XSpace, ".json"/".json.gz" =>
// Kineto JSON) and, failing that, from the first bytes (after gunzip): '{' or '[' => JSON,
// else a first byte 0x0a (XSpace field 1, planes) => XSpace.
TraceFormat DetectTraceFormat(const std::string& file_name, std::string_view first_bytes);

// Reads `source` (already decompressed) to its end and returns the summary. Memory grows
// only with what the summaries need (per-event compact records), never with the text.
// Errors name the source, the byte offset and what was expected.
absl::StatusOr<TraceSummary> AnalyzeTrace(ByteSource& source, TraceFormat format);

// Convenience for the CLI and tests: opens, gunzips when needed, detects and analyses.
absl::StatusOr<TraceSummary> AnalyzeTraceFile(const std::string& path);

}  // namespace fleetprof::analysis
