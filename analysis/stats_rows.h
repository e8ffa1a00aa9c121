#pragma once
// The rows of the `nsys stats` reports (analysis/stats_reports.h computes them), part of a
// profile's summary.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fleetprof::analysis {

enum class StatsReport : uint8_t { kKernSum, kMemTimeSum, kMemSizeSum, kApiSum, kNvtxSum };
inline constexpr size_t kStatsReportCount = 5;

// The reports' names, as `nsys stats --report` spells them, in StatsReport order.
inline constexpr std::array<std::string_view, kStatsReportCount> kStatsReportNames = {
    "cuda_gpu_kern_sum", "cuda_gpu_mem_time_sum", "cuda_gpu_mem_size_sum", "cuda_api_sum", "nvtx_sum"};

// The report named `name`; false when none is.
bool ParseStatsReport(std::string_view name, StatsReport* report);

struct StatsRow {
  std::string name;   // the kernel, operation, call or range
  std::string style;  // nvtx_sum: "PushPop" or "StartEnd"; empty otherwise
  int64_t total = 0;  // ns, or bytes for cuda_gpu_mem_size_sum
  int64_t instances = 0;
  int64_t min = 0;
  int64_t max = 0;
  double avg = 0;
  double med = 0;     // the middle value; the mean of the two middle ones for an even count
  double stddev = 0;  // sample standard deviation; 0 for one instance
  double time_pct = 0;  // 100 × total / the report's total; 0 when that is 0
};

struct StatsReports {
  // In StatsReport order; rows by total descending, then instances descending, then name
  // bytewise (nvtx_sum: name, then style).
  std::array<std::vector<StatsRow>, kStatsReportCount> reports;
  int64_t nvtx_open_ranges = 0;  // ranges without an end: not in nvtx_sum
};

}  // namespace fleetprof::analysis
