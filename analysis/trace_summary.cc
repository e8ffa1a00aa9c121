#include "analysis/trace_summary.h"

namespace fleetprof::analysis {

const char* TraceFormatName(TraceFormat format) {
  switch (format) {
    case TraceFormat::kKinetoJson:
      return "kineto_json";
    case TraceFormat::kXSpace:
      return "xspace";
    case TraceFormat::kUnknown:
      break;
  }
  return "unknown";
}

TraceFormat TraceFormatFromName(const std::string& name) {
  if (name == "kineto_json") return TraceFormat::kKinetoJson;
  if (name == "xspace") return TraceFormat::kXSpace;
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
