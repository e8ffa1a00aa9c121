#pragma once
// Streaming reader of XSpace protobufs (.xplane.pb from JAX, TensorFlow, PyTorch/XLA),
// parsed from the wire format without libprotobuf and without holding a plane's bytes:
// lines come before event_metadata inside an XPlane, so the reader keeps a compact record
// (metadata id, start, duration) per event of the lines that matter and resolves names and
// kinds when the plane ends. Memory grows with those events, not with the file.
//
// What becomes device activity follows docs/analysis.md (XSpace): events of `Stream #…` lines of
// `/device:…` planes, and of `XLA Ops` lines of device planes (merged by name) that have no
// `Stream #` line. `Steps` lines of device planes give steps. Times are picoseconds relative
// to the first such line's timestamp (TraceEvents::ticks_per_ns = 1000).
// The same pass fills TraceEvents::xla_ops (GPU kernels by hlo_op, TPU XLA Ops events:
// analysis/xla_op_breakdown.h) and, from the `/host:CPU` plane's allocator events,
// TraceEvents::memory (analysis/xspace_memory.h). Both keep what they need per plane in
// compact form until the plane's stat and event metadata, which come last, name it.
//
// Skipped and counted: activity events with a negative duration_ps, or whose start is not
// representable in int64 picoseconds relative to that first timestamp; allocator samples
// whose time is not representable either.
// Errors name the byte offset: truncated input, malformed varints, lengths that run past
// their enclosing message, group or unknown wire types, field number 0.

#include "absl/status/status.h"
#include "analysis/byte_source.h"
#include "analysis/trace_events.h"

namespace fleetprof::analysis {

// Reads `source` to its end into `out`.
absl::Status ReadXSpace(ByteSource& source, TraceEvents* out);

}  // namespace fleetprof::analysis
