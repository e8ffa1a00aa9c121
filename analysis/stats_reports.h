#pragma once
// `nsys stats` reports for every profile (docs/analysis.md, "nsys stats reports"): kernels by
// name (cuda_gpu_kern_sum), copies and memsets by operation in time and in bytes
// (cuda_gpu_mem_time_sum, cuda_gpu_mem_size_sum), CUDA calls by name (cuda_api_sum) and NVTX
// ranges by name and style (nvtx_sum). Each row: total, instances, min, max, avg, the median,
// the sample standard deviation and the share of the report's total. Computed at ingest from
// the trace's events, since the median needs every instance.

#include <vector>

#include "analysis/stats_rows.h"
#include "analysis/trace_events.h"

namespace fleetprof::analysis {

// Every report from the trace's own rows: device activity (kernels; copies and memsets with
// their bytes), runtime host events (CUDA calls), and the NVTX ranges the reader found (for a
// Kineto trace, its user_annotation events as PushPop ranges).
StatsReports ComputeStatsReports(const TraceEvents& events);

// One report's rows from (name, style, value) instances: the arithmetic, apart so it is
// tested against a brute-force answer.
struct StatsInstance {
  NameId name = 0;
  bool start_end = false;  // nvtx_sum's style
  int64_t value = 0;
};
std::vector<StatsRow> SummarizeStats(const NameTable& names, std::vector<StatsInstance> instances, bool with_style);

}  // namespace fleetprof::analysis
