// The op breakdown's nesting rules (docs/analysis.md, Op breakdown) on small hand-made traces.

#include <algorithm>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "tests/analysis/analysis_test_util.h"

namespace fleetprof::analysis {
namespace {

using testing::AnalyzeJson;
using testing::FindOp;
using testing::TraceWithEvents;

// A host event; ts and dur are microseconds as Kineto writes them.
std::string Host(const std::string& name, const std::string& ts, const std::string& dur,
                 const std::string& extra = "", const std::string& cat = "cpu_op") {
  return absl::StrCat(R"({"ph": "X", "cat": ")", cat, R"(", "name": ")", name,
                      R"(", "pid": 1, "tid": 1, "ts": )", ts, ", \"dur\": ", dur, extra, "}");
}

std::string Kernel(const std::string& name, const std::string& ts, const std::string& dur,
                   int correlation) {
  return absl::StrCat(R"({"ph": "X", "cat": "kernel", "name": ")", name,
                      R"(", "pid": 0, "tid": 7, "ts": )", ts, ", \"dur\": ", dur,
                      R"(, "args": {"device": 0, "stream": 7, "correlation": )", correlation, "}}");
}

TraceSummary Analyze(const std::vector<std::string>& events) {
  absl::StatusOr<TraceSummary> summary = AnalyzeJson(TraceWithEvents(absl::StrJoin(events, ",")));
  EXPECT_TRUE(summary.ok()) << summary.status();
  return summary.ok() ? *summary : TraceSummary{};
}

TEST(OpBreakdown, SiblingStartingAtParentEndIsNotAChild) {
  TraceSummary s = Analyze({Host("a", "0", "10"), Host("b", "10", "5")});
  ASSERT_NE(FindOp(s, "a"), nullptr);
  EXPECT_EQ(FindOp(s, "a")->self_ns, 10000);
  EXPECT_EQ(FindOp(s, "b")->self_ns, 5000);
}

TEST(OpBreakdown, ZeroDurationEventHasNoChildren) {
  TraceSummary s =
      Analyze({Host("outer", "0", "10"), Host("zero", "2", "0"), Host("next", "2", "3")});
  // Sorted: outer, next (longer first at equal start), zero. zero starts inside next.
  EXPECT_EQ(FindOp(s, "outer")->self_ns, 7000);
  EXPECT_EQ(FindOp(s, "next")->self_ns, 3000);
  EXPECT_EQ(FindOp(s, "zero")->count, 1);
  EXPECT_EQ(FindOp(s, "zero")->self_ns, 0);

  // A zero-duration event followed by one at the same instant: siblings, both children
  // of outer.
  TraceSummary t =
      Analyze({Host("outer", "0", "10"), Host("zero", "4", "0"), Host("later", "4.000", "0")});
  EXPECT_EQ(FindOp(t, "outer")->self_ns, 10000);
  EXPECT_EQ(FindOp(t, "zero")->self_ns, 0);
}

TEST(OpBreakdown, ChildOutlivingItsParentGivesNegativeSelfTime) {
  TraceSummary s = Analyze({Host("parent", "0", "10"), Host("child", "5", "20")});
  EXPECT_EQ(FindOp(s, "parent")->self_ns, -10000);
  EXPECT_EQ(FindOp(s, "parent")->total_ns, 10000);
  EXPECT_EQ(FindOp(s, "child")->self_ns, 20000);
}

TEST(OpBreakdown, EqualStartPutsLongerEventOutsideAndKeepsFileOrderForTies) {
  TraceSummary s = Analyze({Host("short", "0", "2"), Host("long", "0", "8")});
  EXPECT_EQ(FindOp(s, "long")->self_ns, 6000);
  EXPECT_EQ(FindOp(s, "short")->self_ns, 2000);
  // Equal start and duration: the first in the file is the parent.
  TraceSummary t = Analyze({Host("first", "0", "4"), Host("second", "0", "4")});
  EXPECT_EQ(FindOp(t, "first")->self_ns, 0);
  EXPECT_EQ(FindOp(t, "second")->self_ns, 4000);
}

TEST(OpBreakdown, NestsPerThreadComparingIdsAsStrings) {
  // pid/tid as numbers and as strings name the same thread; another tid does not nest.
  TraceSummary s = Analyze({
      R"({"ph": "X", "cat": "cpu_op", "name": "outer", "pid": 1, "tid": 2, "ts": 0, "dur": 10})",
      R"({"ph": "X", "cat": "cpu_op", "name": "inner", "pid": "1", "tid": "2", "ts": 1, "dur": 2})",
      R"({"ph": "X", "cat": "cpu_op", "name": "other", "pid": 1, "tid": 3, "ts": 1, "dur": 2})",
  });
  EXPECT_EQ(FindOp(s, "outer")->self_ns, 8000);
  EXPECT_EQ(FindOp(s, "other")->self_ns, 2000);
}

TEST(OpBreakdown, GroupsRowsByNameAcrossThreadsSortedBySelfTime) {
  TraceSummary s = Analyze({
      R"({"ph": "X", "cat": "cpu_op", "name": "b", "pid": 1, "tid": 1, "ts": 0, "dur": 3})",
      R"({"ph": "X", "cat": "cpu_op", "name": "b", "pid": 1, "tid": 2, "ts": 0, "dur": 3})",
      R"({"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 5, "dur": 6})",
      R"({"ph": "X", "cat": "cpu_op", "name": "c", "pid": 1, "tid": 1, "ts": 20, "dur": 1})",
  });
  ASSERT_EQ(s.ops.size(), 3u);
  EXPECT_EQ(s.ops[0].name, "a");  // 6000, ties broken by name
  EXPECT_EQ(s.ops[1].name, "b");
  EXPECT_EQ(s.ops[1].count, 2);
  EXPECT_EQ(s.ops[2].name, "c");
}

TEST(OpBreakdown, JoinsLaunchedDeviceTimeOnCorrelation) {
  const std::string runtime1 =
      Host("cudaLaunchKernel", "1", "1", R"(, "args": {"correlation": 11})", "cuda_runtime");
  const std::string runtime2 =
      Host("cudaMemcpyAsync", "3", "1", R"(, "args": {"correlation": 12})", "cuda_runtime");
  TraceSummary s = Analyze({
      Host("module", "0", "20"),
      Host("aten::add", "0.5", "4"),
      runtime1,
      runtime2,
      Kernel("k1", "10", "2.5", 11),
      Kernel("k1b", "13", "0.5", 11),
      R"({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "pid": 0, "tid": 7, "ts": 15, "dur": 1, "args": {"device": 0, "correlation": 12}})",
  });
  // aten::add launches k1 + k1b (3 µs) and the memcpy (1 µs) through its runtime children.
  EXPECT_EQ(FindOp(s, "aten::add")->device_self_ns, 4000);
  EXPECT_EQ(FindOp(s, "aten::add")->device_total_ns, 4000);
  EXPECT_EQ(FindOp(s, "module")->device_self_ns, 0);
  EXPECT_EQ(FindOp(s, "module")->device_total_ns, 4000);
  EXPECT_EQ(FindOp(s, "cudaLaunchKernel")->device_self_ns, 0);
  EXPECT_EQ(FindOp(s, "cudaLaunchKernel")->device_total_ns, 3000);
  EXPECT_EQ(FindOp(s, "cudaMemcpyAsync")->device_total_ns, 1000);
}

TEST(OpBreakdown, ExcludesTraceSpansAndGpuAnnotationsFromHostEvents) {
  TraceSummary s = Analyze({
      Host("PyTorch Profiler (0)", "0", "100", "", "Trace"),
      Host("annotation", "0", "100", "", "gpu_user_annotation"),
      Host("cudaDeviceSynchronize", "0", "100", "", "cuda_sync"),
      Host("op", "1", "1"),
  });
  ASSERT_EQ(s.ops.size(), 1u);
  EXPECT_EQ(s.ops[0].name, "op");
}

TEST(OpBreakdown, LegacyEventsWithoutCategoryAreHostEvents) {
  TraceSummary s = Analyze({
      R"({"ph": "X", "name": "mm", "pid": "CPU functions", "tid": 0, "ts": 0, "dur": 5})",
      R"({"ph": "X", "name": "empty", "pid": "CPU functions", "tid": 0, "ts": 1, "dur": 1})",
  });
  EXPECT_EQ(FindOp(s, "mm")->self_ns, 4000);
  EXPECT_EQ(s.unknown_category_events, 0);
}

// Busy time is the union of every kind's intervals, each kind's time the union of its own:
// against a brute-force count of busy nanoseconds on a grid, on random overlapping activities.
TEST(DeviceBreakdown, BusyAndEachKindMatchABruteForceUnion) {
  std::mt19937 rng(11);
  for (int round = 0; round < 20; ++round) {
    std::vector<std::string> events;
    std::vector<bool> busy(2000, false), kinds[3];
    for (auto& k : kinds) k.assign(2000, false);
    for (int i = 0; i < 60; ++i) {
      const int start = static_cast<int>(rng() % 1900), dur = static_cast<int>(rng() % 60);
      const int kind = static_cast<int>(rng() % 3);  // compute, communication, memory
      const char* name = kind == 0 ? "gemm" : kind == 1 ? "ncclKernel_AllReduce_RING_LL_Sum_float" : "Memcpy HtoD";
      const char* cat = kind == 2 ? "gpu_memcpy" : "kernel";
      events.push_back(absl::StrCat(R"({"ph": "X", "cat": ")", cat, R"(", "name": ")", name,
                                    R"(", "pid": 0, "tid": )", 7 + i % 3, ", \"ts\": ", start, ", \"dur\": ", dur,
                                    R"(, "args": {"device": 0, "stream": )", 7 + i % 3, "}}"));
      for (int t = start; t < start + dur; ++t) busy[t] = kinds[kind][t] = true;
    }
    TraceSummary s = Analyze(events);
    ASSERT_EQ(s.devices.size(), 1u);
    auto count = [](const std::vector<bool>& v) { return std::count(v.begin(), v.end(), true) * int64_t{1000}; };
    EXPECT_EQ(s.devices[0].busy_ns, count(busy)) << "round " << round;
    EXPECT_EQ(s.devices[0].compute_ns, count(kinds[0])) << "round " << round;
    EXPECT_EQ(s.devices[0].communication_ns, count(kinds[1])) << "round " << round;
    EXPECT_EQ(s.devices[0].memory_ns, count(kinds[2])) << "round " << round;
    EXPECT_EQ(s.devices[0].idle_ns, s.devices[0].span_ns - count(busy)) << "round " << round;
  }
}

TEST(StepBreakdown, MeasuresDeviceBusyTimeInsideEachStep) {
  TraceSummary s = Analyze({
      Host("ProfilerStep#7", "0", "10", "", "user_annotation"),
      Host("ProfilerStep#8", "10", "10", "", "user_annotation"),
      Kernel("k", "2", "3", 1),
      Kernel("k", "4", "2", 2),
      Kernel("k", "9", "4", 3),
  });
  ASSERT_EQ(s.steps.size(), 2u);
  EXPECT_EQ(s.steps[0].step, 7);
  EXPECT_EQ(s.steps[0].duration_ns, 10000);
  EXPECT_EQ(s.steps[0].device_busy_ns, 5000);  // [2,6) and [9,10)
  EXPECT_EQ(s.steps[0].device_idle_ns, 5000);
  EXPECT_EQ(s.steps[1].device_busy_ns, 3000);  // [10,13)
  EXPECT_EQ(s.steps[1].start_ns, 10000);
}

TEST(MemoryTimeline, TracksPeakPerDevice) {
  auto memory = [](const std::string& ts, int device, int64_t total) {
    return absl::StrCat(R"({"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": )",
                        ts, R"(, "args": {"Device Type": 1, "Device Id": )", device,
                        R"(, "Bytes": 512, "Total Allocated": )", total, "}}");
  };
  TraceSummary s = Analyze(
      {memory("1", 0, 100), memory("2", 0, 900), memory("3", 0, 300), memory("1.5", 1, 50)});
  ASSERT_EQ(s.memory.size(), 2u);
  EXPECT_EQ(s.memory[0].device, "0");
  EXPECT_EQ(s.memory[0].samples, 3);
  EXPECT_EQ(s.memory[0].peak_bytes, 900);
  EXPECT_EQ(s.memory[0].peak_ns, 2000);
  EXPECT_EQ(s.memory[1].device, "1");
  EXPECT_EQ(s.memory[1].peak_bytes, 50);
}

const OpSummary* FindScope(const TraceSummary& s, const std::string& name) {
  for (const OpSummary& row : s.scopes) {
    if (row.name == name) return &row;
  }
  return nullptr;
}

// Work is booked to its innermost enclosing user annotation; the step is not a scope.
TEST(ScopeBreakdown, BooksWorkToTheInnermostAnnotation) {
  const std::string a = "user_annotation";
  TraceSummary s = Analyze({
      Host("ProfilerStep#1", "0", "100", "", a),
      Host("forward", "0", "60", "", a),            // self 60 - 20 - 30 = 10
      Host("aten::mm", "5", "20"),                   // self 20 - 4 = 16, booked to forward
      Host("cudaLaunchKernel", "6", "4", R"(, "args": {"correlation": 1})", "cuda_runtime"),
      Host("rmsnorm", "30", "30", "", a),           // self 30 - 10 = 20
      Host("aten::pow", "35", "10"),                 // self 10 - 2 = 8, booked to rmsnorm
      Host("cudaLaunchKernel", "36", "2", R"(, "args": {"correlation": 2})", "cuda_runtime"),
      Host("aten::add", "70", "5"),                  // outside every scope
      Kernel("gemm", "10", "7", 1), Kernel("pow", "40", "3", 2)});
  EXPECT_EQ(FindScope(s, "ProfilerStep#1"), nullptr);
  EXPECT_EQ(s.scopes.size(), 2u);
  const OpSummary* forward = FindScope(s, "forward");
  const OpSummary* rmsnorm = FindScope(s, "rmsnorm");
  ASSERT_NE(forward, nullptr);
  ASSERT_NE(rmsnorm, nullptr);
  EXPECT_EQ(forward->count, 1);
  EXPECT_EQ(forward->total_ns, 60000);
  EXPECT_EQ(forward->self_ns, 10000 + 16000 + 4000);  // its own, aten::mm's, the launch's
  EXPECT_EQ(forward->device_self_ns, 7000);          // gemm; pow belongs to rmsnorm
  EXPECT_EQ(forward->device_total_ns, 10000);        // everything under it
  EXPECT_EQ(rmsnorm->self_ns, 20000 + 8000 + 2000);
  EXPECT_EQ(rmsnorm->device_self_ns, 3000);
  EXPECT_EQ(rmsnorm->device_total_ns, 3000);
}

// torch without Kineto writes no categories: scopes are the events that are not dispatcher
// ops, steps or autograd nodes.
TEST(ScopeBreakdown, LegacyTracesWithoutCategories) {
  auto legacy = [](const std::string& name, const std::string& ts, const std::string& dur) {
    return absl::StrCat(R"({"ph": "X", "name": ")", name, R"(", "pid": "CPU functions", "tid": 1, "ts": )", ts,
                        ", \"dur\": ", dur, "}");
  };
  TraceSummary s = Analyze({legacy("rmsnorm", "0", "50"), legacy("aten::pow", "1", "10"),
                            legacy("MulBackward0", "20", "10"), legacy("aten::mul", "21", "5"),
                            legacy("ProfilerStep#3", "60", "10")});
  ASSERT_EQ(s.scopes.size(), 1u);
  EXPECT_EQ(s.scopes[0].name, "rmsnorm");
  EXPECT_EQ(s.scopes[0].self_ns, 50000);  // every host event inside it, none a nested scope
}

}  // namespace
}  // namespace fleetprof::analysis
