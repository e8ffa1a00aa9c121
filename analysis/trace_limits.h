#pragma once
// What one trace may make the analysis hold. Every input is untrusted: a 65 KB gzip of empty
// XSpace events or of 16,000 distinct 64 KB names would otherwise take gigabytes. Each limit
// is a flag of `fleetprof analyze` and of fleetprof-server with the same name; a trace over
// one is refused (RESOURCE_EXHAUSTED) with an error naming the flag, except names longer than
// --max_name_bytes, which are cut on a UTF-8 character boundary.
//
// The defaults keep one analysis under about 400 MB of memory on any input while reading
// real traces of 1 GB (about 4 million events) as they are. Events cost the server up to
// about 85 bytes each while one is ingested (78-85 measured with kernels only, 40 in a generated
// PyTorch trace): 12M events take up to 1 GB, so max_trace_events stays at 4M by default and
// a 10M-event trace needs --max_trace_events raised (bench/README.md, trace windows at scale).

#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace fleetprof {
class FlagSet;
}

namespace fleetprof::analysis {

struct TraceLimits {
  int64_t max_trace_mb = 8192;           // bytes after decompression, in MiB
  int64_t max_trace_events = 4'000'000;  // events of every phase
  int64_t max_trace_names = 1'000'000;   // distinct names (events, devices, threads, stats)
  int64_t max_trace_name_mb = 64;        // all distinct names together, in MiB
  int64_t max_name_bytes = 64 << 10;     // one name; longer ones are cut
  int64_t max_trace_depth = 64;          // JSON nesting
  int64_t max_event_stats = 1024;        // stats of one XSpace event or event metadata
  int64_t max_trace_stats = 4'000'000;   // stats one XSpace plane keeps (ops, allocations, metadata)

  // Registers the eight flags, bound to this object's fields (their values are the defaults).
  void AddFlags(FlagSet* flags);
  // INVALID_ARGUMENT naming the first flag that is not positive, or too large to mean anything.
  absl::Status Validate() const;
};

// The errors of the limits, one wording for every reader: "FILE: the trace has more than
// 4000000 events (at byte 123); raise --max_trace_events to read it".
absl::Status TraceLimitError(const std::string& source, const char* what, int64_t limit,
                             const char* flag, uint64_t offset);
// The same, where the input has no byte offset: `where` is e.g. "row 12 of NVTX_EVENTS".
absl::Status TraceLimitErrorAt(const std::string& source, const char* what, int64_t limit,
                               const char* flag, const std::string& where);

}  // namespace fleetprof::analysis
