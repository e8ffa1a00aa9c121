#pragma once
// Converts between the analysis library's TraceSummary and its stored/wire form
// (fleetprof.v1.ProfileSummary). The one place both shapes meet, so the CLI prints a
// server answer with the same JSON writer as `fleetprof analyze`.

#include "analysis/trace_summary.h"
#include "fleetprof/v1/profile.pb.h"

namespace fleetprof {

v1::ProfileSummary SummaryToProto(const analysis::TraceSummary& summary);
analysis::TraceSummary SummaryFromProto(const v1::ProfileSummary& proto);

void DeviceToProto(const analysis::DeviceSummary& in, v1::DeviceBreakdown* out);
void KernelToProto(const analysis::KernelSummary& in, v1::KernelStat* out);
void OpToProto(const analysis::OpSummary& in, v1::OpStat* out);
void XlaOpToProto(const analysis::XlaOpSummary& in, v1::XlaOpStat* out);
analysis::DeviceSummary DeviceFromProto(const v1::DeviceBreakdown& in);
analysis::KernelSummary KernelFromProto(const v1::KernelStat& in);
analysis::OpSummary OpFromProto(const v1::OpStat& in);
analysis::XlaOpSummary XlaOpFromProto(const v1::XlaOpStat& in);

}  // namespace fleetprof
