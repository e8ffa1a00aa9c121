// The stored form of a summary (fleetprof.v1.ProfileSummary) carries every field the analysis
// computed: a field added to TraceSummary but forgotten in the codec fails here.

#include "proto/summary_codec.h"

#include <string>
#include <vector>

#include "google/protobuf/descriptor.h"
#include "gtest/gtest.h"

namespace fleetprof {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

// A summary whose every field, and every field of one row of each section, is not the default.
analysis::TraceSummary EverythingSet() {
  analysis::TraceSummary s;
  s.format = analysis::TraceFormat::kXSpace;
  s.start_ns = 1;
  s.end_ns = 2;
  s.events = 3;
  s.skipped_events = 4;
  s.unknown_category_events = 5;
  s.invalid_utf8_replacements = 2;
  s.devices.push_back({"0", 1, 2, 3, 4, 5, 6, 7, 8, 9});
  s.kernels.push_back({"k", analysis::ActivityKind::kMemory, 1, 2, 3, 4});
  s.ops.push_back({"aten::mm", 1, 2, 3, 4, 5});
  s.scopes.push_back({"rmsnorm", 1, 2, 3, 4, 5});
  s.steps.push_back({7, 1, 2, 3, 4, 5});
  analysis::MemorySummary m;
  m.device = "GPU_0_bfc";
  m.samples = 2;
  m.peak_bytes = 10;
  m.peak_ns = 11;
  m.allocator_peak_bytes = 4096;
  m.timeline.push_back({1, 10});
  s.memory.push_back(m);
  analysis::XlaOpSummary op;
  op.name = "fusion.7";
  op.category = "loop fusion";
  op.module = "jit_train_step";
  op.count = 2;
  op.total_ns = 5;
  op.flops = 700;
  op.flops_per_second = 1.4e11;
  op.bytes_accessed = 9;
  op.bytes_accessed_per_second = 0.5;
  s.xla_ops.push_back(op);
  s.metadata["rank"] = "0";
  for (auto& report : s.stats.reports) report.push_back({"k", "PushPop", 1, 2, 3, 4, 5.0, 6.0, 7.0, 8.0});
  s.stats.nvtx_open_ranges = 1;
  // A call tree: the root and a step frame (names of its own), an op and a kernel (by reference).
  s.call_tree.names = {"total", "ProfilerStep#*", "aten::mm", "k"};
  s.call_tree.nodes = {{0, 0, analysis::FrameKind::kFixed, 0, 0, 0},
                       {1, 1, analysis::FrameKind::kHost, 1, 2, 0},
                       {2, 2, analysis::FrameKind::kHost, 1, 3, 0},
                       {3, 3, analysis::FrameKind::kKernel, 1, 0, 2}};
  return s;
}

// Names (as a.b.c paths) of the fields of `message` that hold their default value.
void CollectUnset(const Message& message, const std::string& prefix, std::vector<std::string>* unset) {
  const auto* d = message.GetDescriptor();
  const auto* r = message.GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    const std::string path = prefix + f->name();
    if (f->is_repeated()) {
      if (r->FieldSize(message, f) == 0) {
        unset->push_back(path);
      } else if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE && !f->is_map()) {
        CollectUnset(r->GetRepeatedMessage(message, f, 0), path + ".", unset);
      }
    } else if (!r->HasField(message, f)) {
      unset->push_back(path);
    }
  }
}

TEST(SummaryCodec, CarriesEveryAnalysedField) {
  v1::ProfileSummary proto = SummaryToProto(EverythingSet());
  std::vector<std::string> unset;
  CollectUnset(proto, "", &unset);
  // Device samples are added by the server (a capture's window), not by the analysis.
  EXPECT_EQ(unset, std::vector<std::string>{"device_samples"});
  // A summary this small leaves the tree little room (10% of it): folded, with its totals.
  int64_t host_self = 0, device = 0;
  for (int64_t v : proto.call_tree().host_self_ns()) host_self += v;
  for (int64_t v : proto.call_tree().device_ns()) device += v;
  EXPECT_EQ(host_self, 5);
  EXPECT_EQ(device, 2);
}

TEST(SummaryCodec, LeavesUnknownOptionalValuesAbsent) {
  analysis::TraceSummary s;
  analysis::XlaOpSummary bare;
  bare.name = "copy.4";
  bare.count = 1;
  s.xla_ops.push_back(bare);
  analysis::MemorySummary kineto_memory;
  kineto_memory.device = "0";
  s.memory.push_back(kineto_memory);
  v1::ProfileSummary proto = SummaryToProto(s);
  const v1::XlaOpStat& op = proto.xla_ops(0);
  EXPECT_FALSE(op.has_category() || op.has_module() || op.has_flops() || op.has_flops_per_second() ||
               op.has_bytes_accessed() || op.has_bytes_accessed_per_second());
  EXPECT_FALSE(proto.memory(0).has_allocator_peak_bytes());
}

TEST(SummaryCodec, KeepsAZeroThatTheTraceReported) {
  analysis::TraceSummary s;
  analysis::XlaOpSummary op;
  op.name = "fusion";
  op.bytes_accessed = 0;  // present though zero
  s.xla_ops.push_back(op);
  EXPECT_TRUE(SummaryToProto(s).xla_ops(0).has_bytes_accessed());
}

}  // namespace
}  // namespace fleetprof
