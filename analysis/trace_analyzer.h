#pragma once
// Entry point of the analysis library: reads one trace as a stream and computes its summary.

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "analysis/byte_source.h"
#include "analysis/trace_events.h"
#include "analysis/trace_limits.h"
#include "analysis/trace_summary.h"

namespace fleetprof::analysis {

// The format whose content test (analysis/trace_formats.h) accepts `first_bytes` (after
// gunzip); when none does, the one whose suffix `file_name` carries; else kUnknown.
TraceFormat DetectTraceFormat(const std::string& file_name, std::string_view first_bytes);

// Where the events of a trace go once read, while the summary is computed from them (Consume
// runs on a thread of its own, so it must only read them): the one seam between every reader
// and the event store (timeline/), whatever the format.
class TraceEventsSink {
 public:
  virtual ~TraceEventsSink() = default;
  // An error fails the analysis with it.
  virtual absl::Status Consume(const TraceEvents& events) = 0;
};

// What a summary holds beyond the views every answer shows: the call tree (flame graphs) and
// the nsys stats reports, a sixth of a large trace's analysis, which `fleetprof analyze` and
// the profile answer leave out.
enum class SummaryParts { kAll, kWithoutTreeAndStats };

// Reads `source` (already decompressed) to its end and returns the summary. Memory grows
// only with what the summaries need (per-event compact records), never with the text.
// Errors name the source, the byte offset and what was expected.
// With a `sink`, hands it the events while they are summarized. A trace over one of `limits`
// is refused with RESOURCE_EXHAUSTED naming the flag to raise (trace_limits.h).
absl::StatusOr<TraceSummary> AnalyzeTrace(ByteSource& source, TraceFormat format,
                                          TraceEventsSink* sink = nullptr,
                                          const TraceLimits& limits = TraceLimits(),
                                          SummaryParts parts = SummaryParts::kAll);

// The one way a file or an upload becomes a summary: gunzips `raw` when it is gzip, then reads
// it as a trace of `format`, or for kUnknown of the format its first bytes (else `raw`'s
// name) show. INVALID_ARGUMENT, naming the source, for an empty or unrecognised stream.
absl::StatusOr<TraceSummary> AnalyzeTraceStream(std::unique_ptr<ByteSource> raw, TraceFormat format,
                                                TraceEventsSink* sink = nullptr,
                                                const TraceLimits& limits = TraceLimits(),
                                                SummaryParts parts = SummaryParts::kAll);

// For the CLI and tests: opens `path` and analyses it (AnalyzeTraceStream).
absl::StatusOr<TraceSummary> AnalyzeTraceFile(const std::string& path,
                                              TraceEventsSink* sink = nullptr,
                                              const TraceLimits& limits = TraceLimits(),
                                              SummaryParts parts = SummaryParts::kAll);

}  // namespace fleetprof::analysis
