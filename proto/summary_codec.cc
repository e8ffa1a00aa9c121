#include "proto/summary_codec.h"

namespace fleetprof {

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

void XlaOpToProto(const analysis::XlaOpSummary& in, v1::XlaOpStat* out) {
  out->set_name(in.name);
  out->set_category(in.category);
  out->set_module(in.module);
  out->set_count(in.count);
  out->set_total_ns(in.total_ns);
  if (in.flops) out->set_flops(*in.flops);
  if (in.flops_per_second) out->set_flops_per_second(*in.flops_per_second);
  if (in.bytes_accessed) out->set_bytes_accessed(*in.bytes_accessed);
  if (in.bytes_accessed_per_second) {
    out->set_bytes_accessed_per_second(*in.bytes_accessed_per_second);
  }
}

analysis::DeviceSummary DeviceFromProto(const v1::DeviceBreakdown& in) {
  analysis::DeviceSummary out;
  out.device = in.device();
  out.events = in.events();
  out.start_ns = in.start_ns();
  out.end_ns = in.end_ns();
  out.span_ns = in.span_ns();
  out.busy_ns = in.busy_ns();
  out.idle_ns = in.idle_ns();
  out.compute_ns = in.compute_ns();
  out.communication_ns = in.communication_ns();
  out.memory_ns = in.memory_ns();
  return out;
}

analysis::KernelSummary KernelFromProto(const v1::KernelStat& in) {
  analysis::KernelSummary out;
  out.name = in.name();
  analysis::ActivityKindFromName(in.kind(), &out.kind);
  out.count = in.count();
  out.total_ns = in.total_ns();
  out.min_ns = in.min_ns();
  out.max_ns = in.max_ns();
  return out;
}

analysis::OpSummary OpFromProto(const v1::OpStat& in) {
  analysis::OpSummary out;
  out.name = in.name();
  out.count = in.count();
  out.total_ns = in.total_ns();
  out.self_ns = in.self_ns();
  out.device_self_ns = in.device_self_ns();
  out.device_total_ns = in.device_total_ns();
  return out;
}

analysis::XlaOpSummary XlaOpFromProto(const v1::XlaOpStat& in) {
  analysis::XlaOpSummary out;
  out.name = in.name();
  out.category = in.category();
  out.module = in.module();
  out.count = in.count();
  out.total_ns = in.total_ns();
  if (in.has_flops()) out.flops = in.flops();
  if (in.has_flops_per_second()) out.flops_per_second = in.flops_per_second();
  if (in.has_bytes_accessed()) out.bytes_accessed = in.bytes_accessed();
  if (in.has_bytes_accessed_per_second()) {
    out.bytes_accessed_per_second = in.bytes_accessed_per_second();
  }
  return out;
}

v1::ProfileSummary SummaryToProto(const analysis::TraceSummary& summary) {
  v1::ProfileSummary out;
  out.set_format(analysis::TraceFormatName(summary.format));
  out.set_start_ns(summary.start_ns);
  out.set_end_ns(summary.end_ns);
  out.set_events(summary.events);
  out.set_skipped_events(summary.skipped_events);
  for (const auto& d : summary.devices) DeviceToProto(d, out.add_devices());
  for (const auto& k : summary.kernels) KernelToProto(k, out.add_kernels());
  for (const auto& o : summary.ops) OpToProto(o, out.add_ops());
  for (const auto& s : summary.steps) {
    auto* step = out.add_steps();
    step->set_step(s.step);
    step->set_start_ns(s.start_ns);
    step->set_end_ns(s.end_ns);
    step->set_duration_ns(s.duration_ns);
    step->set_device_busy_ns(s.device_busy_ns);
    step->set_device_idle_ns(s.device_idle_ns);
  }
  for (const auto& m : summary.memory) {
    auto* mem = out.add_memory();
    mem->set_device(m.device);
    mem->set_samples(m.samples);
    mem->set_peak_bytes(m.peak_bytes);
    mem->set_peak_ns(m.peak_ns);
    mem->set_allocator_peak_bytes(m.allocator_peak_bytes);
    for (const auto& p : m.timeline) {
      auto* point = mem->add_timeline();
      point->set_ts_ns(p.ts_ns);
      point->set_allocated_bytes(p.allocated_bytes);
    }
  }
  for (const auto& op : summary.xla_ops) XlaOpToProto(op, out.add_xla_ops());
  for (const auto& [key, value] : summary.metadata) (*out.mutable_metadata())[key] = value;
  return out;
}

analysis::TraceSummary SummaryFromProto(const v1::ProfileSummary& proto) {
  analysis::TraceSummary out;
  out.format = analysis::TraceFormatFromName(proto.format());
  out.start_ns = proto.start_ns();
  out.end_ns = proto.end_ns();
  out.events = proto.events();
  out.skipped_events = proto.skipped_events();
  for (const auto& d : proto.devices()) out.devices.push_back(DeviceFromProto(d));
  for (const auto& k : proto.kernels()) out.kernels.push_back(KernelFromProto(k));
  for (const auto& o : proto.ops()) out.ops.push_back(OpFromProto(o));
  for (const auto& s : proto.steps()) {
    out.steps.push_back({s.step(), s.start_ns(), s.end_ns(), s.duration_ns(), s.device_busy_ns(),
                         s.device_idle_ns()});
  }
  for (const auto& m : proto.memory()) {
    analysis::MemorySummary mem;
    mem.device = m.device();
    mem.samples = m.samples();
    mem.peak_bytes = m.peak_bytes();
    mem.peak_ns = m.peak_ns();
    mem.allocator_peak_bytes = m.allocator_peak_bytes();
    for (const auto& p : m.timeline()) mem.timeline.push_back({p.ts_ns(), p.allocated_bytes()});
    out.memory.push_back(std::move(mem));
  }
  for (const auto& op : proto.xla_ops()) out.xla_ops.push_back(XlaOpFromProto(op));
  for (const auto& [key, value] : proto.metadata()) out.metadata[key] = value;
  return out;
}

}  // namespace fleetprof
