#pragma once
// A TraceSummary as the CLI and the API print it: through the stored form and the one JSON
// writer (proto/summary_codec.h, proto/proto_json.h).

#include <string>

#include "analysis/trace_summary.h"
#include "proto/proto_json.h"
#include "proto/summary_codec.h"

namespace fleetprof::analysis {

inline std::string SummaryToJson(const TraceSummary& summary) {
  return ProtoToJson(SummaryToProto(summary));
}

}  // namespace fleetprof::analysis
