#pragma once
// Turns the analysis library's TraceSummary into fleetprof.v1.ProfileSummary, the form the
// server stores and serves and every JSON output prints (proto/proto_json.h). The one place
// the two shapes meet; nothing converts back, so a proto field exists once for every reader.
// tests/analysis/summary_codec_test.cc fails when a summary field is not carried over.

#include "analysis/trace_summary.h"
#include "absl/status/statusor.h"
#include "fleetprof/v1/profile.pb.h"
#include "fleetprof/v1/query.pb.h"

namespace fleetprof {

v1::ProfileSummary SummaryToProto(const analysis::TraceSummary& summary);

// The `stats` answer of a summary: the reports `report` names ("a,b"; empty: every one), as
// the server's GetStats and the CLI's local `fleetprof stats FILE` print it. INVALID_ARGUMENT
// names an unknown report; FAILED_PRECONDITION a summary stored before reports existed.
absl::StatusOr<v1::StatsResponse> StatsAnswer(const v1::ProfileSummary& summary, const std::string& report);

}  // namespace fleetprof
