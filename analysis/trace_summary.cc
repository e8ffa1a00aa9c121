#include "analysis/trace_summary.h"

#include "analysis/trace_formats.h"
#include "common/utf8.h"

namespace fleetprof::analysis {

const char* TraceFormatName(TraceFormat format) {
  const TraceFormatSpec* spec = FindTraceFormat(format);
  return spec ? spec->name.data() : "unknown";
}

TraceFormat TraceFormatFromName(const std::string& name) {
  for (const TraceFormatSpec& spec : TraceFormats()) {
    if (spec.name == name) return spec.format;
  }
  return TraceFormat::kUnknown;
}

const char* ActivityKindName(ActivityKind kind) {
  switch (kind) {
    case ActivityKind::kCompute:
      return "compute";
    case ActivityKind::kCommunication:
      return "communication";
    case ActivityKind::kMemory:
      return "memory";
  }
  return "compute";
}

bool ActivityKindFromName(const std::string& name, ActivityKind* kind) {
  if (name == "compute") {
    *kind = ActivityKind::kCompute;
  } else if (name == "communication") {
    *kind = ActivityKind::kCommunication;
  } else if (name == "memory") {
    *kind = ActivityKind::kMemory;
  } else {
    return false;
  }
  return true;
}

void MakeStringsValidUtf8(TraceSummary* summary) {
  int64_t n = 0;
  for (DeviceSummary& d : summary->devices) n += MakeValidUtf8(&d.device);
  for (KernelSummary& k : summary->kernels) n += MakeValidUtf8(&k.name);
  for (OpSummary& o : summary->ops) n += MakeValidUtf8(&o.name);
  for (OpSummary& o : summary->scopes) n += MakeValidUtf8(&o.name);
  for (MemorySummary& m : summary->memory) n += MakeValidUtf8(&m.device);
  for (XlaOpSummary& x : summary->xla_ops) {
    n += MakeValidUtf8(&x.name) + MakeValidUtf8(&x.category) + MakeValidUtf8(&x.module);
  }
  // The tree's names repeat the op and kernel names, replaced alike; not counted twice.
  for (std::string& name : summary->call_tree.names) MakeValidUtf8(&name);
  // The reports' names repeat kernel, op and annotation names too: not counted again.
  for (std::vector<StatsRow>& report : summary->stats.reports) {
    for (StatsRow& row : report) MakeValidUtf8(&row.name);
  }
  std::map<std::string, std::string> metadata;
  for (const auto& [k, v] : summary->metadata) {
    std::string key = k, value = v;
    n += MakeValidUtf8(&key) + MakeValidUtf8(&value);
    metadata[std::move(key)] = std::move(value);
  }
  summary->metadata = std::move(metadata);
  summary->invalid_utf8_replacements += n;
}

}  // namespace fleetprof::analysis
