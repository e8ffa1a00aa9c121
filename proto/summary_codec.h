#pragma once
// Turns the analysis library's TraceSummary into fleetprof.v1.ProfileSummary, the form the
// server stores and serves and every JSON output prints (proto/proto_json.h). The one place
// the two shapes meet; nothing converts back, so a proto field exists once for every reader.
// tests/analysis/summary_codec_test.cc fails when a summary field is not carried over.

#include "analysis/trace_summary.h"
#include "fleetprof/v1/profile.pb.h"

namespace fleetprof {

v1::ProfileSummary SummaryToProto(const analysis::TraceSummary& summary);

}  // namespace fleetprof
