// The stored form of a summary (fleetprof.v1.ProfileSummary) carries the XLA op view and
// the allocator peak both ways, optional fields staying absent when they were.

#include "proto/summary_codec.h"

#include "analysis/summary_json.h"
#include "gtest/gtest.h"

namespace fleetprof {
namespace {

analysis::TraceSummary Sample() {
  analysis::TraceSummary s;
  s.format = analysis::TraceFormat::kXSpace;
  analysis::XlaOpSummary full;
  full.name = "fusion.7";
  full.category = "loop fusion";
  full.module = "jit_train_step";
  full.count = 2;
  full.total_ns = 5;
  full.flops = 700;
  full.flops_per_second = 1.4e11;
  full.bytes_accessed = 0;  // present though zero
  full.bytes_accessed_per_second = 0.5;
  s.xla_ops.push_back(full);
  analysis::XlaOpSummary bare;
  bare.name = "copy.4";
  bare.count = 1;
  s.xla_ops.push_back(bare);
  analysis::MemorySummary m;
  m.device = "GPU_0_bfc";
  m.samples = 2;
  m.peak_bytes = 10;
  m.allocator_peak_bytes = 4096;
  m.timeline.push_back({1, 10});
  s.memory.push_back(m);
  return s;
}

TEST(SummaryCodec, RoundTripsXlaOpsAndAllocatorPeak) {
  v1::ProfileSummary proto = SummaryToProto(Sample());
  ASSERT_EQ(proto.xla_ops_size(), 2);
  EXPECT_TRUE(proto.xla_ops(0).has_bytes_accessed());
  EXPECT_FALSE(proto.xla_ops(1).has_flops());
  EXPECT_EQ(proto.memory(0).allocator_peak_bytes(), 4096);

  // Through the wire bytes, as the server stores and serves it.
  v1::ProfileSummary parsed;
  ASSERT_TRUE(parsed.ParseFromString(proto.SerializeAsString()));
  analysis::TraceSummary back = SummaryFromProto(parsed);
  ASSERT_EQ(back.xla_ops.size(), 2u);
  const analysis::XlaOpSummary& full = back.xla_ops[0];
  EXPECT_EQ(full.name, "fusion.7");
  EXPECT_EQ(full.category, "loop fusion");
  EXPECT_EQ(full.module, "jit_train_step");
  EXPECT_EQ(full.count, 2);
  EXPECT_EQ(full.total_ns, 5);
  EXPECT_EQ(full.flops, 700);
  EXPECT_EQ(full.flops_per_second, 1.4e11);
  EXPECT_EQ(full.bytes_accessed, 0);
  EXPECT_EQ(full.bytes_accessed_per_second, 0.5);
  const analysis::XlaOpSummary& bare = back.xla_ops[1];
  EXPECT_FALSE(bare.flops || bare.flops_per_second || bare.bytes_accessed ||
               bare.bytes_accessed_per_second);
  EXPECT_EQ(back.memory[0].allocator_peak_bytes, 4096);
  // The CLI prints a server answer with the same JSON as a local analysis.
  EXPECT_EQ(analysis::SummaryToJson(back), analysis::SummaryToJson(Sample()));
}

}  // namespace
}  // namespace fleetprof
