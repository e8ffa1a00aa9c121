// The XLA op view of XSpace on hand-built planes: GPU kernels grouped by hlo_op (ref and
// string stats, on the event or its metadata), TPU "XLA Ops" lines with category, flops and
// bytes, no double counting on planes that have both, and field-order tolerance.

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tests/analysis/summary_json_for_test.h"
#include "gtest/gtest.h"
#include "simdjson.h"
#include "tests/analysis/analysis_test_util.h"
#include "tests/analysis/xspace_builder.h"
#include "tests/test_support.h"

namespace fleetprof::analysis {
namespace {

using testing::AnalyzeXSpace;
using testing::DoubleStat;
using testing::Event;
using testing::FindDevice;
using testing::FindKernel;
using testing::IntStat;
using testing::Line;
using testing::Metadata;
using testing::Plane;
using testing::Proto;
using testing::RefStat;
using testing::Space;
using testing::StrStat;
using testing::UintStat;

// Stat metadata ids shared by the planes below; 100+ are ref_value targets.
enum : int64_t { kHloOp = 10, kModule, kFlops, kBytes, kCategory, kCorrelation };
const std::vector<std::pair<int64_t, std::string>> kStatNames = {
    {kHloOp, "hlo_op"},         {kModule, "hlo_module"},     {kFlops, "flops"},
    {kBytes, "bytes_accessed"}, {kCategory, "hlo_category"}, {kCorrelation, "correlation_id"},
    {100, "fusion.1"},          {101, "jit_train_step"},     {102, "dot.2"},
    {103, "collective"}};

TraceSummary Analyze(const std::string& bytes, size_t chunk = SIZE_MAX) {
  absl::StatusOr<TraceSummary> summary = AnalyzeXSpace(bytes, chunk);
  EXPECT_TRUE(summary.ok()) << summary.status();
  return summary.ok() ? *summary : TraceSummary{};
}

const XlaOpSummary* FindXlaOp(const TraceSummary& s, const std::string& name) {
  for (const XlaOpSummary& op : s.xla_ops) {
    if (op.name == name) return &op;
  }
  return nullptr;
}

// A GPU plane: two kernels of fusion.1 (ref stats), one of dot.2 whose bytes_accessed sits
// on the kernel's metadata, one reduce.3 named by a str_value, one copy.4 whose hlo_op is
// on its metadata only, and a memcpy without hlo_op.
Proto GpuPlane(const std::string& name) {
  auto fusion = [](int64_t offset, int64_t flops, int64_t correlation) {
    return Event(1, offset, 1500,
                 {RefStat(kHloOp, 100), RefStat(kModule, 101), IntStat(kFlops, flops),
                  IntStat(kCorrelation, correlation)});
  };
  Proto stream = Line("Stream #7(Compute)", 1000,
                      {fusion(0, 1000, 1), fusion(10000, 1000, 2), fusion(20000, 1000, 3),
                       Event(2, 30000, 2500, {RefStat(kHloOp, 102), RefStat(kModule, 101)}),
                       Event(2, 40000, 2500, {RefStat(kHloOp, 102), RefStat(kModule, 101)}),
                       Event(5, 50000, 700, {StrStat(kHloOp, "reduce.3")}), Event(4, 60000, 900),
                       Event(3, 70000, 4000)});
  return Plane(name, {stream},
               {Metadata(1, "fusion_kernel"),
                Metadata(2, "sm90_gemm", {UintStat(kBytes, 4096), StrStat(kCategory, "gemm")}),
                Metadata(3, "MemcpyH2D"), Metadata(4, "copy_kernel", {StrStat(kHloOp, "copy.4")}),
                Metadata(5, "reduce_kernel", {StrStat(kCategory, "reduction")})},
               kStatNames);
}

TEST(XlaOpBreakdown, GroupsGpuKernelsByHloOpResolvingRefValues) {
  TraceSummary s = Analyze(Space({GpuPlane("/device:GPU:0")}));
  ASSERT_EQ(s.xla_ops.size(), 4u);  // the memcpy has no hlo_op

  const XlaOpSummary* fusion = FindXlaOp(s, "fusion.1");
  ASSERT_NE(fusion, nullptr);
  EXPECT_EQ(fusion->module, "jit_train_step");
  EXPECT_EQ(fusion->category, "");
  EXPECT_EQ(fusion->count, 3);
  EXPECT_EQ(fusion->total_ns, 4);  // 4500 ps, floored once
  ASSERT_TRUE(fusion->flops.has_value());
  EXPECT_EQ(*fusion->flops, 3000);
  EXPECT_DOUBLE_EQ(*fusion->flops_per_second, 3000 / 4500e-12);
  EXPECT_FALSE(fusion->bytes_accessed.has_value());
  EXPECT_FALSE(fusion->bytes_accessed_per_second.has_value());

  const XlaOpSummary* dot = FindXlaOp(s, "dot.2");
  ASSERT_NE(dot, nullptr);
  EXPECT_EQ(dot->count, 2);
  EXPECT_EQ(dot->total_ns, 5);
  EXPECT_EQ(dot->category, "gemm");          // from the metadata
  EXPECT_EQ(dot->bytes_accessed, 2 * 4096);  // metadata value, once per event
  EXPECT_DOUBLE_EQ(*dot->bytes_accessed_per_second, 8192 / 5000e-12);
  EXPECT_FALSE(dot->flops.has_value());

  const XlaOpSummary* reduce = FindXlaOp(s, "reduce.3");
  ASSERT_NE(reduce, nullptr);
  EXPECT_EQ(reduce->category, "reduction");
  EXPECT_EQ(reduce->module, "");
  EXPECT_EQ(reduce->total_ns, 0);  // 700 ps
  ASSERT_NE(FindXlaOp(s, "copy.4"), nullptr);
  EXPECT_EQ(FindXlaOp(s, "copy.4")->count, 1);

  // Sorted by total_ns descending, then name.
  EXPECT_EQ(s.xla_ops[0].name, "dot.2");
  EXPECT_EQ(s.xla_ops[1].name, "fusion.1");
  EXPECT_EQ(s.xla_ops[2].name, "copy.4");
  EXPECT_EQ(s.xla_ops[3].name, "reduce.3");
  // The kernel view is unchanged: kernels keep their own names.
  EXPECT_EQ(FindKernel(s, "fusion_kernel")->count, 3);
  EXPECT_EQ(FindKernel(s, "MemcpyH2D")->kind, ActivityKind::kMemory);
}

TEST(XlaOpBreakdown, MergesOpsAcrossDevices) {
  TraceSummary s = Analyze(Space({GpuPlane("/device:GPU:0"), GpuPlane("/device:GPU:1")}));
  const XlaOpSummary* fusion = FindXlaOp(s, "fusion.1");
  ASSERT_NE(fusion, nullptr);
  EXPECT_EQ(fusion->count, 6);
  EXPECT_EQ(fusion->total_ns, 9);
  EXPECT_EQ(*fusion->flops, 6000);
  EXPECT_EQ(s.xla_ops.size(), 4u);
}

// A TPU plane: no Stream line, so its XLA Ops line is the activity and the op view.
Proto TpuPlane() {
  Proto ops =
      Line("XLA Ops", 5000,
           {Event(1, 0, 2000), Event(1, 2000, 3000, {IntStat(kFlops, 100)}), Event(2, 5000, 1000)});
  Proto modules = Line("XLA Modules", 5000, {Event(3, 0, 6000)});
  return Plane("/device:TPU:0", {ops, modules},
               {Metadata(1, "fusion.7",
                         {StrStat(kCategory, "loop fusion"), IntStat(kFlops, 600),
                          UintStat(kBytes, 1200), RefStat(kModule, 101)}),
                Metadata(2, "all-reduce.1", {RefStat(kCategory, 103), DoubleStat(kFlops, 7.6)}),
                Metadata(3, "jit_train_step(1)")},
               kStatNames);
}

TEST(XlaOpBreakdown, ReadsTpuXlaOpsLinesWithCategoryFlopsAndBytes) {
  TraceSummary s = Analyze(Space({TpuPlane()}));
  ASSERT_EQ(s.xla_ops.size(), 2u);  // the XLA Modules line is no op
  const XlaOpSummary* fusion = FindXlaOp(s, "fusion.7");
  ASSERT_NE(fusion, nullptr);
  EXPECT_EQ(fusion->category, "loop fusion");
  EXPECT_EQ(fusion->module, "jit_train_step");
  EXPECT_EQ(fusion->count, 2);
  EXPECT_EQ(fusion->total_ns, 5);
  EXPECT_EQ(*fusion->flops, 600 + 100);  // the event's own stat wins over the metadata's
  EXPECT_DOUBLE_EQ(*fusion->flops_per_second, 700 / 5000e-12);
  EXPECT_EQ(*fusion->bytes_accessed, 2400);
  EXPECT_DOUBLE_EQ(*fusion->bytes_accessed_per_second, 2400 / 5000e-12);

  const XlaOpSummary* all_reduce = FindXlaOp(s, "all-reduce.1");
  ASSERT_NE(all_reduce, nullptr);
  EXPECT_EQ(all_reduce->category, "collective");  // a ref_value on the metadata
  EXPECT_EQ(*all_reduce->flops, 8);               // a double, rounded once
  EXPECT_EQ(s.xla_ops[0].name, "fusion.7");

  const DeviceSummary* tpu = FindDevice(s, "/device:TPU:0");
  ASSERT_NE(tpu, nullptr);
  EXPECT_EQ(tpu->events, 3);
}

TEST(XlaOpBreakdown, IgnoresTheDerivedXlaOpsLineOfGpuPlanes) {
  // The XLA Ops line repeats the ops the kernels ran; on a GPU plane it would count twice,
  // also when the Stream line only comes in a second message of the same plane.
  Proto derived = Line("XLA Ops", 1000, {Event(9, 0, 99000), Event(9, 0, 99000)});
  std::vector<Proto> metadata = {Metadata(9, "fusion.1")};
  TraceSummary s = Analyze(Space({
      Plane("/device:GPU:0", {derived}, metadata, kStatNames),
      GpuPlane("/device:GPU:0"),
      Plane("/device:GPU:3", {derived}, metadata, kStatNames),
      Plane("/device:GPU:3", {Line("Stream #1", 1000, {Event(1, 0, 1000, {RefStat(kHloOp, 100)})})},
            {Metadata(1, "k")}, kStatNames),
  }));
  // Rows are per (name, module): the GPU:3 kernel has no hlo_module, so it is its own row.
  // Neither row has the XLA Ops events (99 ns each).
  int rows = 0;
  for (const XlaOpSummary& op : s.xla_ops) {
    if (op.name != "fusion.1") continue;
    ++rows;
    EXPECT_EQ(op.count, op.module.empty() ? 1 : 3) << op.module;
    EXPECT_EQ(op.total_ns, op.module.empty() ? 1 : 4) << op.module;
  }
  EXPECT_EQ(rows, 2);
}

TEST(XlaOpBreakdown, ToleratesFieldOrderAndIgnoresOtherPlanesAndLines) {
  // Stream line named after its events; a "TensorFlow Ops" line (named late too) whose
  // events carry hlo_op; stat metadata before the lines; plane name last; a host plane with
  // a Stream line.
  Proto stat_names;
  for (const auto& [id, name] : kStatNames) stat_names.Message(5, testing::StatMetadata(id, name));
  Proto hlo_event = Event(1, 0, 2000, {RefStat(kHloOp, 102)});
  Proto stream = Proto().Varint(3, 10).Message(4, hlo_event).Bytes(2, "Stream #3");
  Proto tf_ops = Proto().Varint(3, 10).Message(4, hlo_event).Bytes(2, "TensorFlow Ops");
  Proto plane = Proto()
                    .Raw(stat_names.bytes())
                    .Message(3, stream)
                    .Message(3, tf_ops)
                    .Message(4, Metadata(1, "gemm"))
                    .Bytes(2, "/device:GPU:2");
  TraceSummary s = Analyze(Space({
      plane,
      Plane("/host:CPU", {Line("Stream #1", 0, {hlo_event})}, {Metadata(1, "gemm")}, kStatNames),
  }));
  ASSERT_EQ(s.xla_ops.size(), 1u);
  EXPECT_EQ(s.xla_ops[0].name, "dot.2");
  EXPECT_EQ(s.xla_ops[0].count, 1);
  EXPECT_EQ(s.xla_ops[0].total_ns, 2);
}

TEST(XlaOpBreakdown, SkipsNegativeDurationsAndDoesNotDependOnReadBoundaries) {
  Proto plane = GpuPlane("/device:GPU:0");
  std::string bytes = Space({plane, TpuPlane()});
  TraceSummary whole = Analyze(bytes);
  TraceSummary bytewise = Analyze(bytes, 1);
  EXPECT_EQ(SummaryToJson(bytewise), SummaryToJson(whole));

  TraceSummary negative =
      Analyze(Space({Plane("/device:GPU:0",
                           {Line("Stream #1", 0,
                                 {Event(1, 0, static_cast<uint64_t>(-5), {RefStat(kHloOp, 100)}),
                                  Event(1, 0, 3000, {RefStat(kHloOp, 100)})})},
                           {Metadata(1, "k")}, kStatNames)}));
  EXPECT_EQ(negative.skipped_events, 1);
  ASSERT_EQ(negative.xla_ops.size(), 1u);
  EXPECT_EQ(negative.xla_ops[0].count, 1);
  EXPECT_EQ(negative.xla_ops[0].total_ns, 3);
}

TEST(XlaOpBreakdown, WritesXlaOpsJsonWithOptionalFieldsOnlyWhenKnown) {
  TraceSummary s = Analyze(Space({TpuPlane()}));
  std::string json = SummaryToJson(s);
  EXPECT_NE(json.find("\"xla_ops\":[{\"name\":\"fusion.7\",\"category\":\"loop fusion\","
                      "\"module\":\"jit_train_step\",\"count\":2,\"total_ns\":5,\"flops\":700,"
                      "\"flops_per_second\":"),
            std::string::npos)
      << json;
  simdjson::dom::parser parser;
  simdjson::padded_string text(json);
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(text).get(doc), simdjson::SUCCESS) << json;
  simdjson::dom::element op = doc["xla_ops"].at(0);
  EXPECT_DOUBLE_EQ(double(op["flops_per_second"].get_double()), 700 / 5000e-12);
  EXPECT_EQ(int64_t(op["bytes_accessed"].get_int64()), 2400);
  EXPECT_DOUBLE_EQ(double(op["bytes_accessed_per_second"].get_double()), 2400 / 5000e-12);
  simdjson::dom::element all_reduce = doc["xla_ops"].at(1);
  EXPECT_EQ(all_reduce["module"].error(), simdjson::NO_SUCH_FIELD);  // absent, not ""
  EXPECT_EQ(all_reduce["bytes_accessed"].error(), simdjson::NO_SUCH_FIELD);

  TraceSummary plain = Analyze(
      Space({Plane("/device:GPU:0", {Line("Stream #1", 0, {Event(1, 0, 1000)})}, {{1, "k"}})}));
  EXPECT_TRUE(plain.xla_ops.empty());
  // Every summary has the same keys: a trace without XLA ops says so with an empty list.
  EXPECT_NE(SummaryToJson(plain).find("\"xla_ops\":[]"), std::string::npos);
}

TEST(XlaOpBreakdown, TensorFlowCorpusTraceHasNoXlaOps) {
  // A TF graph-mode trace: its kernels carry no hlo_op, so the view is empty.
  const std::string path = fleetprof::testing::CorpusPath("xspace/tf_8gpu_multi_worker.xplane.pb");
  FLEETPROF_REQUIRE_PATH(path);
  TraceSummary s = Analyze(testing::ReadDecompressed(path));
  EXPECT_TRUE(s.xla_ops.empty());
  EXPECT_FALSE(s.kernels.empty());
}

namespace call_tree {

// "path;to;frame" -> (count, device_ns) of the summary's call tree.
std::map<std::string, std::pair<int64_t, int64_t>> Frames(const TraceSummary& s) {
  std::map<std::string, std::pair<int64_t, int64_t>> out;
  std::vector<std::string> path;
  for (const CallTreeNode& node : s.call_tree.nodes) {
    path.resize(node.depth);
    path.push_back(s.call_tree.names[node.name]);
    std::string key;
    for (const std::string& p : path) key += (key.empty() ? "" : ";") + p;
    out[key] = {node.count, node.device_ns};
  }
  return out;
}

TEST(XlaCallTree, KernelsSitUnderModuleCategoryAndOpAndTheRestUnderNoOp) {
  TraceSummary s = Analyze(Space({GpuPlane("/device:GPU:0"), GpuPlane("/device:GPU:1")}));
  auto frames = Frames(s);
  using P = std::pair<int64_t, int64_t>;
  EXPECT_EQ(frames["total;jit_train_step;fusion.1;fusion_kernel"], P(6, 9));  // 6 x 1500 ps
  EXPECT_EQ(frames["total;jit_train_step;gemm;dot.2;sm90_gemm"], P(4, 10));
  EXPECT_EQ(frames["total;reduction;reduce.3;reduce_kernel"], P(2, 1));     // 1400 ps
  EXPECT_EQ(frames["total;copy.4;copy_kernel"], P(2, 1));                   // 1800 ps
  EXPECT_EQ(frames["total;(device time outside XLA ops);MemcpyH2D"], P(2, 8));
  int64_t device = 0, kernels = 0;
  for (const CallTreeNode& node : s.call_tree.nodes) device += node.device_ns;
  for (const KernelSummary& k : s.kernels) kernels += k.total_ns;
  EXPECT_EQ(device, kernels);
}

TEST(XlaCallTree, TpuOpsAreTheirOwnKernels) {
  TraceSummary s = Analyze(Space({TpuPlane()}));
  auto frames = Frames(s);
  using P = std::pair<int64_t, int64_t>;
  EXPECT_EQ(frames["total;jit_train_step;loop fusion;fusion.7;fusion.7"], P(2, 5));
  EXPECT_EQ(frames["total;collective;all-reduce.1;all-reduce.1"], P(1, 1));
}

TEST(XlaCallTree, AKernelOfTwoOpsSplitsItsFlooredTotalExactly) {
  // 1500 ps under each op: the row is floor(3000 / 1000) = 3 ns; floored leaves would say 2.
  Proto stream = Line("Stream #7(Compute)", 1000,
                      {Event(1, 0, 1500, {RefStat(kHloOp, 100), RefStat(kModule, 101)}),
                       Event(1, 5000, 1500, {RefStat(kHloOp, 102), RefStat(kModule, 101)})});
  TraceSummary s = Analyze(Space({Plane("/device:GPU:0", {stream}, {Metadata(1, "shared_kernel")}, kStatNames)}));
  auto frames = Frames(s);
  const auto a = frames["total;jit_train_step;fusion.1;shared_kernel"];
  const auto b = frames["total;jit_train_step;dot.2;shared_kernel"];
  EXPECT_EQ(a.first + b.first, 2);
  EXPECT_EQ(a.second + b.second, 3);
  ASSERT_NE(FindKernel(s, "shared_kernel"), nullptr);
  EXPECT_EQ(FindKernel(s, "shared_kernel")->total_ns, 3);
}

}  // namespace call_tree

}  // namespace
}  // namespace fleetprof::analysis
