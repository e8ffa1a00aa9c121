#pragma once
// The one JSON form of a TraceSummary, shared by `fleetprof analyze --json` and the query
// commands: {"devices":[…],"kernels":[…],"ops":[…],"steps":[…],"memory":[…]} with the field
// names of ../shared/corpus/reference/*.ref.json and integer *_ns values.

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
};

std::string SummaryToJson(const TraceSummary& summary, const SummaryJsonSections& sections = {});

// Appends `s` to `out` as a JSON string literal (quotes and escapes included).
void AppendJsonString(std::string* out, std::string_view s);

}  // namespace fleetprof::analysis
