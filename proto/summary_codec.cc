#include "proto/summary_codec.h"

#include <array>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "analysis/stats_rows.h"
#include "proto/call_tree_codec.h"

namespace fleetprof {
namespace {

void DeviceToProto(const analysis::DeviceSummary& in, v1::DeviceBreakdown* out) {
  out->set_device(in.device);
  out->set_events(in.events);
  out->set_start_ns(in.start_ns);
  out->set_end_ns(in.end_ns);
  out->set_span_ns(in.span_ns);
  out->set_busy_ns(in.busy_ns);
  out->set_idle_ns(in.idle_ns);
  out->set_compute_ns(in.compute_ns);
  out->set_communication_ns(in.communication_ns);
  out->set_memory_ns(in.memory_ns);
}

void KernelToProto(const analysis::KernelSummary& in, v1::KernelStat* out) {
  out->set_name(in.name);
  out->set_kind(analysis::ActivityKindName(in.kind));
  out->set_count(in.count);
  out->set_total_ns(in.total_ns);
  out->set_min_ns(in.min_ns);
  out->set_max_ns(in.max_ns);
}

void OpToProto(const analysis::OpSummary& in, v1::OpStat* out) {
  out->set_name(in.name);
  out->set_count(in.count);
  out->set_total_ns(in.total_ns);
  out->set_self_ns(in.self_ns);
  out->set_device_self_ns(in.device_self_ns);
  out->set_device_total_ns(in.device_total_ns);
}

void StepToProto(const analysis::StepSummary& in, v1::StepStat* out) {
  out->set_step(in.step);
  out->set_start_ns(in.start_ns);
  out->set_end_ns(in.end_ns);
  out->set_duration_ns(in.duration_ns);
  out->set_device_busy_ns(in.device_busy_ns);
  out->set_device_idle_ns(in.device_idle_ns);
}

void MemoryToProto(const analysis::MemorySummary& in, v1::DeviceMemory* out) {
  out->set_device(in.device);
  out->set_samples(in.samples);
  out->set_peak_bytes(in.peak_bytes);
  out->set_peak_ns(in.peak_ns);
  if (in.allocator_peak_bytes != 0) out->set_allocator_peak_bytes(in.allocator_peak_bytes);
  for (const auto& p : in.timeline) {
    auto* point = out->add_timeline();
    point->set_ts_ns(p.ts_ns);
    point->set_allocated_bytes(p.allocated_bytes);
  }
}

void XlaOpToProto(const analysis::XlaOpSummary& in, v1::XlaOpStat* out) {
  out->set_name(in.name);
  if (!in.category.empty()) out->set_category(in.category);
  if (!in.module.empty()) out->set_module(in.module);
  out->set_count(in.count);
  out->set_total_ns(in.total_ns);
  if (in.flops) out->set_flops(*in.flops);
  if (in.flops_per_second) out->set_flops_per_second(*in.flops_per_second);
  if (in.bytes_accessed) out->set_bytes_accessed(*in.bytes_accessed);
  if (in.bytes_accessed_per_second) out->set_bytes_accessed_per_second(*in.bytes_accessed_per_second);
}

// The numbers every report's row has; the first key is the row type's own.
template <typename Row>
void StatsNumbersToProto(const analysis::StatsRow& in, Row* out) {
  out->set_time_pct(in.time_pct);
  out->set_total(in.total);
  out->set_instances(in.instances);
  out->set_avg(in.avg);
  out->set_med(in.med);
  out->set_min(in.min);
  out->set_max(in.max);
  out->set_stddev(in.stddev);
}

void StatsToProto(const analysis::StatsReports& in, v1::StatsReports* out) {
  using analysis::StatsReport;
  const auto& report = [&in](StatsReport r) -> const std::vector<analysis::StatsRow>& {
    return in.reports[static_cast<size_t>(r)];
  };
  // Each report is set even when it has no rows, so it prints as [].
  const auto names = [](const std::vector<analysis::StatsRow>& rows, v1::StatsNameReport* to) {
    for (const analysis::StatsRow& row : rows) {
      v1::StatsNameRow* r = to->add_rows();
      r->set_name(row.name);
      StatsNumbersToProto(row, r);
    }
  };
  const auto operations = [](const std::vector<analysis::StatsRow>& rows, v1::StatsOperationReport* to) {
    for (const analysis::StatsRow& row : rows) {
      v1::StatsOperationRow* r = to->add_rows();
      r->set_operation(row.name);
      StatsNumbersToProto(row, r);
    }
  };
  names(report(StatsReport::kKernSum), out->mutable_cuda_gpu_kern_sum());
  operations(report(StatsReport::kMemTimeSum), out->mutable_cuda_gpu_mem_time_sum());
  operations(report(StatsReport::kMemSizeSum), out->mutable_cuda_gpu_mem_size_sum());
  names(report(StatsReport::kApiSum), out->mutable_cuda_api_sum());
  v1::StatsRangeReport* ranges = out->mutable_nvtx_sum();  // set even when empty: printed as []
  for (const analysis::StatsRow& row : report(StatsReport::kNvtxSum)) {
    v1::StatsRangeRow* r = ranges->add_rows();
    r->set_range(row.name);
    r->set_style(row.style);
    StatsNumbersToProto(row, r);
  }
}

std::string KnownReports() {
  std::string names;
  for (std::string_view name : analysis::kStatsReportNames) absl::StrAppend(&names, names.empty() ? "" : ", ", std::string(name));
  return names;
}

// Which reports `spec` ("a,b"; empty: all) names, in StatsReport order.
absl::StatusOr<std::array<bool, analysis::kStatsReportCount>> WantedReports(const std::string& spec) {
  std::array<bool, analysis::kStatsReportCount> wanted{};
  if (spec.empty()) {
    wanted.fill(true);
    return wanted;
  }
  for (absl::string_view name : absl::StrSplit(spec, ',', absl::SkipWhitespace())) {
    analysis::StatsReport report;
    if (!analysis::ParseStatsReport(std::string_view(name.data(), name.size()), &report)) {
      return absl::InvalidArgumentError(absl::StrCat("unknown report '", std::string(name.substr(0, 64)),
                                                     "': want one of ",
                                                     KnownReports()));
    }
    wanted[static_cast<size_t>(report)] = true;
  }
  return wanted;
}

}  // namespace

v1::ProfileSummary SummaryToProto(const analysis::TraceSummary& summary) {
  v1::ProfileSummary out;
  out.set_format(analysis::TraceFormatName(summary.format));
  out.set_start_ns(summary.start_ns);
  out.set_end_ns(summary.end_ns);
  out.set_events(summary.events);
  out.set_skipped_events(summary.skipped_events);
  out.set_unknown_category_events(summary.unknown_category_events);
  out.set_invalid_utf8_replacements(summary.invalid_utf8_replacements);
  for (const auto& d : summary.devices) DeviceToProto(d, out.add_devices());
  for (const auto& k : summary.kernels) KernelToProto(k, out.add_kernels());
  for (const auto& o : summary.ops) OpToProto(o, out.add_ops());
  for (const auto& o : summary.scopes) OpToProto(o, out.add_scopes());
  for (const auto& s : summary.steps) StepToProto(s, out.add_steps());
  for (const auto& m : summary.memory) MemoryToProto(m, out.add_memory());
  for (const auto& op : summary.xla_ops) XlaOpToProto(op, out.add_xla_ops());
  for (const auto& [key, value] : summary.metadata) (*out.mutable_metadata())[key] = value;
  CallTreeToProto(summary.call_tree, &out);  // refers to the ops and kernels above
  StatsToProto(summary.stats, out.mutable_stats());
  out.set_nvtx_open_ranges(summary.stats.nvtx_open_ranges);
  return out;
}

absl::StatusOr<v1::StatsResponse> StatsAnswer(const v1::ProfileSummary& summary, const std::string& report) {
  absl::StatusOr<std::array<bool, analysis::kStatsReportCount>> wanted = WantedReports(report);
  if (!wanted.ok()) return wanted.status();
  if (!summary.has_stats()) {
    return absl::FailedPreconditionError(
        "this profile was stored before fleetprof computed nsys stats reports; upload its file again to get them");
  }
  const v1::StatsReports& all = summary.stats();
  v1::StatsResponse response;
  v1::StatsReports* out = response.mutable_reports();
  using analysis::StatsReport;
  const auto want = [&](StatsReport r) { return (*wanted)[static_cast<size_t>(r)]; };
  if (want(StatsReport::kKernSum)) *out->mutable_cuda_gpu_kern_sum() = all.cuda_gpu_kern_sum();
  if (want(StatsReport::kMemTimeSum)) *out->mutable_cuda_gpu_mem_time_sum() = all.cuda_gpu_mem_time_sum();
  if (want(StatsReport::kMemSizeSum)) *out->mutable_cuda_gpu_mem_size_sum() = all.cuda_gpu_mem_size_sum();
  if (want(StatsReport::kApiSum)) *out->mutable_cuda_api_sum() = all.cuda_api_sum();
  if (want(StatsReport::kNvtxSum)) *out->mutable_nvtx_sum() = all.nvtx_sum();
  response.set_nvtx_open_ranges(summary.nvtx_open_ranges());
  return response;
}

}  // namespace fleetprof
