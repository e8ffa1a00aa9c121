#pragma once
// The registry of trace formats fleetprof reads. A format is one row here plus its reader's
// files: its stored name, the file suffixes that suggest it, how its first bytes look, and
// the reader that fills TraceEvents. Detection asks the content first and the name only
// when the content says nothing (too few bytes), so a misnamed upload still reads right.

#include <span>
#include <string_view>

#include "absl/status/status.h"
#include "analysis/byte_source.h"
#include "analysis/trace_events.h"

namespace fleetprof::analysis {

struct TraceFormatSpec {
  TraceFormat format;
  std::string_view name;  // as stored and as accepted in UploadMetadata.format
  std::string_view title;  // in messages: "an XSpace profile"
  std::span<const std::string_view> suffixes;  // of the file name, after a ".gz" is removed
  // Whether `first_bytes` (decompressed, at most a few dozen) start a file of this format.
  bool (*looks_like)(std::string_view first_bytes);
  absl::Status (*read)(ByteSource& source, TraceEvents* out);
  // What the format can answer beyond kernels: a host op breakdown and record_function scopes
  // (diffs --by op and --by scope).
  bool host_ops;
};

// Every format, in the order content detection tries them.
std::span<const TraceFormatSpec> TraceFormats();
// The row of `format`; null for kUnknown.
const TraceFormatSpec* FindTraceFormat(TraceFormat format);

}  // namespace fleetprof::analysis
