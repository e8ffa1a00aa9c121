#pragma once
// The one JSON form of a TraceSummary, shared by `fleetprof analyze --json` and the query
// commands: {"devices":[…],"kernels":[…],"ops":[…],"steps":[…],"memory":[…],"xla_ops":[…]}
// with the field names of ../shared/corpus/reference/*.ref.json and integer *_ns values.
// "xla_ops" appears only when the summary has XLA ops (XSpace), so Kineto outputs keep
// their shape; optional fields (an op's category, module, flops, rates; a memory device's
// allocator_peak_bytes) likewise appear only when known. Rates are JSON numbers (doubles).

#include <string>

#include "analysis/trace_summary.h"

namespace fleetprof::analysis {

// Each section is written only when its flag is set, so `fleetprof kernels` prints
// {"kernels":[…]} alone.
struct SummaryJsonSections {
  bool devices = true;
  bool kernels = true;
  bool ops = true;
  bool steps = true;
  bool memory = true;
  bool metadata = true;
  // Last, so that positional initialisers written before it still mean the same flags.
  bool xla_ops = true;
};

std::string SummaryToJson(const TraceSummary& summary, const SummaryJsonSections& sections = {});

// Appends `s` to `out` as a JSON string literal (quotes and escapes included).
void AppendJsonString(std::string* out, std::string_view s);

}  // namespace fleetprof::analysis
