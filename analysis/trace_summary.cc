#include "analysis/trace_summary.h"

#include "analysis/trace_formats.h"

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

}  // namespace fleetprof::analysis
