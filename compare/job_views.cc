#include "compare/job_views.h"

#include <algorithm>

#include "common/checked_math.h"

namespace fleetprof::compare {
namespace {

int64_t Median(std::vector<int64_t> values) {
  if (values.empty()) return 0;
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  return values[mid];
}

}  // namespace

void JobOpsSum::Add(const v1::ProfileSummary& summary) {
  sum_.set_profiles(sum_.profiles() + 1);
  for (const v1::OpStat& op : summary.ops()) {
    auto [it, added] = op_index_.try_emplace(op.name(), sum_.ops_size());
    if (added) {
      *sum_.add_ops() = op;
      continue;
    }
    v1::OpStat& into = *sum_.mutable_ops(it->second);
    into.set_count(SaturatingAdd(into.count(), op.count()));
    into.set_total_ns(SaturatingAdd(into.total_ns(), op.total_ns()));
    into.set_self_ns(SaturatingAdd(into.self_ns(), op.self_ns()));
    into.set_device_self_ns(SaturatingAdd(into.device_self_ns(), op.device_self_ns()));
    into.set_device_total_ns(SaturatingAdd(into.device_total_ns(), op.device_total_ns()));
  }
  for (const v1::KernelStat& k : summary.kernels()) {
    auto [it, added] = kernel_index_.try_emplace(k.name(), sum_.kernels_size());
    if (added) {
      *sum_.add_kernels() = k;
      continue;
    }
    v1::KernelStat& into = *sum_.mutable_kernels(it->second);
    into.set_count(SaturatingAdd(into.count(), k.count()));
    into.set_total_ns(SaturatingAdd(into.total_ns(), k.total_ns()));
    into.set_min_ns(std::min(into.min_ns(), k.min_ns()));
    into.set_max_ns(std::max(into.max_ns(), k.max_ns()));
  }
}

v1::JobOpsResponse JobOpsSum::Finish() const {
  v1::JobOpsResponse out = sum_;
  auto* ops = out.mutable_ops();
  std::sort(ops->begin(), ops->end(), [](const v1::OpStat& a, const v1::OpStat& b) {
    return a.self_ns() != b.self_ns() ? a.self_ns() > b.self_ns() : a.name() < b.name();
  });
  auto* kernels = out.mutable_kernels();
  std::sort(kernels->begin(), kernels->end(), [](const v1::KernelStat& a, const v1::KernelStat& b) {
    return a.total_ns() != b.total_ns() ? a.total_ns() > b.total_ns() : a.name() < b.name();
  });
  return out;
}

v1::JobProfilePoint JobPoint(const v1::ProfileInfo& info, const v1::ProfileSummary& summary) {
  v1::JobProfilePoint p;
  p.set_profile_id(info.profile_id());
  p.set_node(info.node());
  // A label is the uploader's explicit word; the trace's own distributedInfo comes next.
  if (auto label = info.labels().find("rank"); label != info.labels().end()) {
    p.set_rank(label->second);
  } else if (auto it = summary.metadata().find("rank"); it != summary.metadata().end()) {
    p.set_rank(it->second);
  }
  if (auto it = info.labels().find("capture_id"); it != info.labels().end()) p.set_capture_id(it->second);
  p.set_ingested_at_ns(info.ingested_at_ns());
  p.set_start_ns(info.start_ns());
  p.set_end_ns(info.end_ns());
  std::vector<int64_t> steps;
  int64_t step_sum = 0;
  for (const v1::StepStat& s : summary.steps()) {
    steps.push_back(s.duration_ns());
    step_sum = SaturatingAdd(step_sum, s.duration_ns());
  }
  p.set_steps(static_cast<int64_t>(steps.size()));
  if (!steps.empty()) p.set_mean_step_ns(step_sum / static_cast<int64_t>(steps.size()));
  p.set_median_step_ns(Median(std::move(steps)));
  int64_t busy = 0, span = 0;
  for (const v1::DeviceBreakdown& d : summary.devices()) {
    busy = SaturatingAdd(busy, d.busy_ns());
    span = SaturatingAdd(span, d.span_ns());
  }
  p.set_device_busy_ns(busy);
  p.set_device_span_ns(span);
  if (span > 0) p.set_busy_ratio(static_cast<double>(busy) / static_cast<double>(span));
  int64_t peak = 0;
  for (const v1::DeviceMemory& m : summary.memory()) peak = std::max(peak, m.peak_bytes());
  p.set_peak_memory_bytes(peak);
  return p;
}

int64_t MedianStepNs(const std::vector<v1::JobProfilePoint>& points) {
  std::vector<int64_t> medians;
  for (const v1::JobProfilePoint& p : points) {
    if (p.median_step_ns() > 0) medians.push_back(p.median_step_ns());
  }
  return Median(std::move(medians));
}

}  // namespace fleetprof::compare
