// The call tree (analysis/call_tree.h) on small hand-made traces: nesting, steps, clipping,
// launches, folding, and its totals against the op and kernel tables.

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "analysis/call_tree.h"
#include "analysis/trace_analyzer.h"
#include "gtest/gtest.h"
#include "tests/analysis/analysis_test_util.h"

namespace fleetprof::analysis {
namespace {

using testing::AnalyzeJson;
using testing::FindOp;
using testing::TraceWithEvents;

std::string Host(const std::string& name, const std::string& ts, const std::string& dur,
                 const std::string& cat = "cpu_op", const std::string& extra = "") {
  return absl::StrCat(R"({"ph": "X", "cat": ")", cat, R"(", "name": ")", name,
                      R"(", "pid": 1, "tid": 1, "ts": )", ts, ", \"dur\": ", dur, extra, "}");
}

std::string Launch(const std::string& ts, int correlation) {
  return Host("cudaLaunchKernel", ts, "1", "cuda_runtime", absl::StrCat(R"(, "args": {"correlation": )", correlation, "}"));
}

std::string Kernel(const std::string& name, const std::string& ts, const std::string& dur, int correlation) {
  return absl::StrCat(R"({"ph": "X", "cat": "kernel", "name": ")", name, R"(", "pid": 0, "tid": 7, "ts": )", ts,
                      ", \"dur\": ", dur, R"(, "args": {"device": 0, "stream": 7, "correlation": )", correlation,
                      "}}");
}

TraceSummary Analyze(const std::vector<std::string>& events) {
  absl::StatusOr<TraceSummary> summary = AnalyzeJson(TraceWithEvents(absl::StrJoin(events, ",")));
  EXPECT_TRUE(summary.ok()) << summary.status();
  return summary.ok() ? *summary : TraceSummary{};
}

// Each frame as "path;to;frame" -> node, for lookups.
std::map<std::string, CallTreeNode> ByPath(const CallTree& tree) {
  std::map<std::string, CallTreeNode> out;
  std::vector<std::string> path;
  for (const CallTreeNode& node : tree.nodes) {
    path.resize(node.depth);
    path.push_back(tree.names[node.name]);
    EXPECT_TRUE(out.emplace(absl::StrJoin(path, ";"), node).second) << "frame twice: " << absl::StrJoin(path, ";");
  }
  return out;
}

struct Totals {
  int64_t host_self = 0;
  int64_t device = 0;
  int64_t nodes = 0;
};
Totals TotalsOf(const CallTree& tree) {
  Totals t;
  for (const CallTreeNode& node : tree.nodes) {
    t.host_self += node.host_self_ns;
    t.device += node.device_ns;
    ++t.nodes;
  }
  return t;
}

TEST(CallTree, StepsMergeIntoOneFrame) {
  const TraceSummary s = Analyze({Host("ProfilerStep#1", "0", "10", "user_annotation"), Host("aten::mm", "1", "4"),
                                  Host("ProfilerStep#2", "10", "10", "user_annotation"), Host("aten::mm", "12", "4")});
  auto frames = ByPath(s.call_tree);
  ASSERT_EQ(frames.count("total;ProfilerStep#*"), 1u);
  EXPECT_EQ(frames["total;ProfilerStep#*"].count, 2);
  EXPECT_EQ(frames["total;ProfilerStep#*"].host_self_ns, 12000);
  EXPECT_EQ(frames["total;ProfilerStep#*;aten::mm"].count, 2);
  EXPECT_EQ(frames["total;ProfilerStep#*;aten::mm"].host_self_ns, 8000);
}

TEST(CallTree, ChildOverrunningItsParentIsClippedAndSelfTimeNeverNegative) {
  // b outlives a: the op table gives a self 0 and b 10 us; the tree clips b to a.
  const TraceSummary s = Analyze({Host("root", "0", "20"), Host("a", "0", "10"), Host("b", "5", "10")});
  auto frames = ByPath(s.call_tree);
  EXPECT_EQ(frames["total;root"].host_self_ns, 10000);
  EXPECT_EQ(frames["total;root;a"].host_self_ns, 5000);
  EXPECT_EQ(frames["total;root;a;b"].host_self_ns, 5000);
  EXPECT_EQ(FindOp(s, "a")->self_ns, 0);
  // Both add up to the outermost event's duration.
  int64_t op_self = 0;
  for (const OpSummary& op : s.ops) op_self += op.self_ns;
  EXPECT_EQ(TotalsOf(s.call_tree).host_self, op_self);
  EXPECT_EQ(op_self, 20000);
}

TEST(CallTree, KernelsSitUnderTheRuntimeCallThatLaunchedThem) {
  const TraceSummary s = Analyze({Host("aten::mm", "0", "10"), Launch("1", 7), Launch("3", 8),
                                  Kernel("gemm", "20", "5", 7), Kernel("gemm", "30", "2", 8),
                                  Kernel("orphan", "40", "3", 99)});
  auto frames = ByPath(s.call_tree);
  const CallTreeNode& gemm = frames["total;aten::mm;cudaLaunchKernel;gemm"];
  EXPECT_EQ(gemm.count, 2);
  EXPECT_EQ(gemm.device_ns, 7000);
  EXPECT_EQ(frames["total;aten::mm;cudaLaunchKernel"].count, 2);
  const std::string unlaunched = absl::StrCat("total;", kUnlaunchedFrame, ";orphan");
  ASSERT_EQ(frames.count(unlaunched), 1u);
  EXPECT_EQ(frames[unlaunched].device_ns, 3000);
  EXPECT_EQ(frames[unlaunched].count, 1);
  EXPECT_EQ(TotalsOf(s.call_tree).device, 10000);
}

// A correlation id that two runtime calls carry (a damaged or merged trace): the kernel goes
// under the first of them in nesting order, once, and ids are matched exactly (no neighbour).
TEST(CallTree, AKernelWhoseIdTwoCallsCarryGoesUnderTheFirst) {
  const TraceSummary s = Analyze({Host("aten::add", "0", "10"), Launch("1", 5), Host("aten::mul", "20", "10"),
                                  Launch("21", 5), Launch("22", 9), Kernel("k5", "40", "4", 5),
                                  Kernel("k9", "50", "2", 9), Kernel("k6", "60", "1", 6)});
  auto frames = ByPath(s.call_tree);
  EXPECT_EQ(frames["total;aten::add;cudaLaunchKernel;k5"].device_ns, 4000);
  EXPECT_EQ(frames.count("total;aten::mul;cudaLaunchKernel;k5"), 0u);
  EXPECT_EQ(frames["total;aten::mul;cudaLaunchKernel;k9"].device_ns, 2000);
  EXPECT_EQ(frames[absl::StrCat("total;", kUnlaunchedFrame, ";k6")].device_ns, 1000);
  EXPECT_EQ(TotalsOf(s.call_tree).device, 7000);
}

// Hands the events to BuildCallTree with a small node budget.
class SmallTree : public TraceEventsSink {
 public:
  explicit SmallTree(int64_t max_nodes) : max_nodes_(max_nodes) {}
  absl::Status Consume(const TraceEvents& events) override {
    tree = BuildCallTree(events, max_nodes_);
    return absl::OkStatus();
  }
  CallTree tree;

 private:
  int64_t max_nodes_;
};

TEST(CallTree, FoldingToTheNodeBudgetKeepsEveryTotalExact) {
  std::vector<std::string> events{Host("big", "0", "1000")};
  for (int i = 0; i < 40; ++i) {
    const std::string ts = absl::StrCat(100 + i * 10);
    events.push_back(Host(absl::StrCat("small", i), ts, absl::StrCat(2 + i % 3)));
    events.push_back(Launch(ts, i + 1));
    events.push_back(Kernel(i % 2 == 0 ? "even" : "odd", absl::StrCat(2000 + i * 10), "3", i + 1));
  }
  SmallTree sink(12);
  auto summary = AnalyzeTraceStream(
      std::unique_ptr<ByteSource>(OpenStringSource("t.json", TraceWithEvents(absl::StrJoin(events, ",")))),
      TraceFormat::kKinetoJson, &sink);
  ASSERT_TRUE(summary.ok()) << summary.status();
  const Totals folded = TotalsOf(sink.tree);
  EXPECT_LE(folded.nodes, 12);
  const Totals full = TotalsOf(summary->call_tree);
  EXPECT_GT(full.nodes, 12);
  EXPECT_EQ(folded.host_self, full.host_self);
  EXPECT_EQ(folded.device, full.device);
  EXPECT_EQ(folded.device, 40 * 3000);
  // The folded frames' kernels stay merged by name under "other".
  auto frames = ByPath(sink.tree);
  EXPECT_EQ(frames["total;big;other;even"].device_ns, 20 * 3000);
  EXPECT_EQ(frames["total;big;other;odd"].count, 20);
}

}  // namespace
}  // namespace fleetprof::analysis
