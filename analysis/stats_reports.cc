#include "analysis/stats_reports.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include "absl/container/flat_hash_map.h"

namespace fleetprof::analysis {
namespace {

constexpr char kUserAnnotation[] = "user_annotation";

int64_t Saturated(__int128 v) {
  return v > std::numeric_limits<int64_t>::max() ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(v);
}

// One (name, style) group's values, sorted: its row. `scale` turns the values into the
// report's unit (ticks per ns for times, 1 for bytes); totals are summed before scaling, so
// XSpace's picoseconds are floored once, as everywhere else.
StatsRow RowOf(std::string name, std::string style, std::vector<int64_t>& values, int64_t scale) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  __int128 sum = 0;
  for (int64_t v : values) sum += v;
  const long double mean = static_cast<long double>(sum) / static_cast<long double>(n);
  long double squares = 0;
  for (int64_t v : values) {
    const long double d = static_cast<long double>(v) - mean;
    squares += d * d;
  }
  StatsRow row;
  row.name = std::move(name);
  row.style = std::move(style);
  row.instances = static_cast<int64_t>(n);
  row.total = Saturated(sum / scale);
  row.min = values.front() / scale;
  row.max = values.back() / scale;
  row.avg = static_cast<double>(mean / scale);
  const long double middle = n % 2 == 1 ? static_cast<long double>(values[n / 2])
                                        : (static_cast<long double>(values[n / 2 - 1]) + values[n / 2]) / 2;
  row.med = static_cast<double>(middle / scale);
  row.stddev = n > 1 ? static_cast<double>(std::sqrt(squares / static_cast<long double>(n - 1)) / scale) : 0.0;
  return row;
}

std::vector<StatsRow> Summarize(const NameTable& names, std::vector<StatsInstance> instances, bool with_style,
                                int64_t scale) {
  // Grouped by (name, style) in first-seen order, then sorted as the report wants.
  absl::flat_hash_map<uint64_t, size_t> group_of;
  std::vector<std::pair<StatsInstance, std::vector<int64_t>>> groups;
  for (const StatsInstance& i : instances) {
    const uint64_t key = (static_cast<uint64_t>(i.name) << 1) | (with_style && i.start_end ? 1 : 0);
    auto [it, added] = group_of.try_emplace(key, groups.size());
    if (added) groups.push_back({i, {}});
    groups[it->second].second.push_back(i.value);
  }
  std::vector<StatsRow> rows;
  rows.reserve(groups.size());
  __int128 report_total = 0;
  for (auto& [first, values] : groups) {
    rows.push_back(RowOf(std::string(names.Get(first.name)),
                         with_style ? (first.start_end ? "StartEnd" : "PushPop") : "", values, scale));
    report_total += rows.back().total;
  }
  for (StatsRow& row : rows) {
    row.time_pct = report_total > 0 ? 100.0 * static_cast<double>(row.total) / static_cast<double>(report_total) : 0;
  }
  std::sort(rows.begin(), rows.end(), [](const StatsRow& a, const StatsRow& b) {
    return std::tie(b.total, b.instances, a.name, a.style) < std::tie(a.total, a.instances, b.name, b.style);
  });
  return rows;
}

}  // namespace

bool ParseStatsReport(std::string_view name, StatsReport* report) {
  for (size_t i = 0; i < kStatsReportNames.size(); ++i) {
    if (kStatsReportNames[i] == name) {
      *report = static_cast<StatsReport>(i);
      return true;
    }
  }
  return false;
}

std::vector<StatsRow> SummarizeStats(const NameTable& names, std::vector<StatsInstance> instances, bool with_style) {
  return Summarize(names, std::move(instances), with_style, 1);
}

StatsReports ComputeStatsReports(const TraceEvents& events) {
  std::vector<StatsInstance> kernels, copy_times, copy_sizes, calls, ranges;
  size_t next_size = 0;  // copy_bytes is sparse and ascending by activity index
  for (size_t i = 0; i < events.activity.size(); ++i) {
    const DeviceActivity& a = events.activity[i];
    if (a.kind != ActivityKind::kMemory) {
      kernels.push_back({a.name, false, a.dur});
      continue;
    }
    copy_times.push_back({a.name, false, a.dur});
    while (next_size < events.copy_bytes.size() && events.copy_bytes[next_size].first < i) ++next_size;
    const bool sized = next_size < events.copy_bytes.size() && events.copy_bytes[next_size].first == i;
    copy_sizes.push_back({a.name, false, sized ? events.copy_bytes[next_size].second : 0});
  }
  // XSpace's host lines are no CUDA calls or NVTX ranges: its API and NVTX reports are empty.
  const bool host_reports = events.format != TraceFormat::kXSpace;
  const std::optional<NameId> annotation = events.names.Find(kUserAnnotation);
  for (size_t i = 0; host_reports && i < events.host.size(); ++i) {
    const HostEvent& h = events.host[i];
    if (h.is_runtime) {
      calls.push_back({h.name, false, h.dur});
    } else if (!events.has_nvtx_ranges && annotation && h.category == *annotation) {
      ranges.push_back({h.name, false, h.dur});
    }
  }
  if (host_reports && events.has_nvtx_ranges) {
    for (const TraceEvents::NvtxRange& r : events.nvtx_ranges) ranges.push_back({r.name, r.start_end, r.dur});
  }
  StatsReports out;
  const int64_t tick = events.ticks_per_ns;
  out.reports[static_cast<size_t>(StatsReport::kKernSum)] = Summarize(events.names, std::move(kernels), false, tick);
  out.reports[static_cast<size_t>(StatsReport::kMemTimeSum)] =
      Summarize(events.names, std::move(copy_times), false, tick);
  out.reports[static_cast<size_t>(StatsReport::kMemSizeSum)] = Summarize(events.names, std::move(copy_sizes), false, 1);
  out.reports[static_cast<size_t>(StatsReport::kApiSum)] = Summarize(events.names, std::move(calls), false, tick);
  out.reports[static_cast<size_t>(StatsReport::kNvtxSum)] = Summarize(events.names, std::move(ranges), true, tick);
  out.nvtx_open_ranges = host_reports ? events.nvtx_open_ranges : 0;
  return out;
}

}  // namespace fleetprof::analysis
