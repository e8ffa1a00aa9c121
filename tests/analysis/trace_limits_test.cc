// The trace limits (analysis/trace_limits.h): each refuses a trace over it with an error that
// names the flag, and the defaults let ordinary traces through. Also the time range every
// reader enforces (times near int64 made spans negative and sums overflow) and the paths that
// were quadratic: steps that all span the trace, and one XSpace event with many stats.

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analysis/trace_analyzer.h"
#include "analysis/trace_limits.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/analysis/analysis_test_util.h"
#include "tests/analysis/xspace_builder.h"

namespace fleetprof::analysis {
namespace {

using ::testing::HasSubstr;
using testing::Event;
using testing::IntStat;
using testing::Line;
using testing::Metadata;
using testing::Plane;
using testing::Proto;
using testing::Space;
using testing::StrStat;
using testing::TraceWithEvents;

absl::StatusOr<TraceSummary> Analyze(const std::string& bytes, TraceFormat format,
                                     const TraceLimits& limits) {
  std::unique_ptr<ByteSource> source = OpenStringSource("limits.trace", bytes, 4096);
  return AnalyzeTrace(*source, format, nullptr, limits);
}

std::string Kernel(const std::string& name, int64_t ts_us, int64_t dur_us) {
  return absl::StrCat(R"({"ph":"X","cat":"kernel","name":")", name, R"(","ts":)", ts_us,
                      R"(,"dur":)", dur_us, R"(,"pid":0,"tid":7,"args":{"device":0}})");
}

std::string Kernels(int n, const std::string& prefix, bool distinct) {
  std::string events;
  for (int i = 0; i < n; ++i) {
    if (i > 0) events += ",";
    events += Kernel(distinct ? absl::StrCat(prefix, i) : prefix, i * 10, 5);
  }
  return TraceWithEvents(events);
}

void ExpectRefused(const absl::StatusOr<TraceSummary>& summary, const std::string& flag) {
  ASSERT_FALSE(summary.ok()) << "expected --" << flag << " to refuse the trace";
  EXPECT_EQ(summary.status().code(), absl::StatusCode::kResourceExhausted) << summary.status();
  EXPECT_THAT(summary.status().message(), HasSubstr("limits.trace: the trace has more than"));
  EXPECT_THAT(summary.status().message(), HasSubstr("raise --" + flag + " to read it"));
}

TEST(TraceLimits, DefaultsReadOrdinaryTraces) {
  const std::string trace = Kernels(1000, "kernel_", true);
  absl::StatusOr<TraceSummary> summary = Analyze(trace, TraceFormat::kKinetoJson, TraceLimits());
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->kernels.size(), 1000u);
  EXPECT_TRUE(TraceLimits().Validate().ok());
}

TEST(TraceLimits, DecompressedBytes) {
  TraceLimits limits;
  limits.max_trace_mb = 1;
  const std::string trace = Kernels(20000, "k", false);  // about 1.6 MiB
  ASSERT_GT(trace.size(), 1u << 20);
  ExpectRefused(Analyze(trace, TraceFormat::kKinetoJson, limits), "max_trace_mb");
  limits.max_trace_mb = 2;
  EXPECT_TRUE(Analyze(trace, TraceFormat::kKinetoJson, limits).ok());
}

TEST(TraceLimits, EventsBothFormats) {
  TraceLimits limits;
  limits.max_trace_events = 10;
  ExpectRefused(Analyze(Kernels(11, "k", false), TraceFormat::kKinetoJson, limits),
                "max_trace_events");
  EXPECT_TRUE(Analyze(Kernels(10, "k", false), TraceFormat::kKinetoJson, limits).ok());

  std::vector<Proto> events(11, Event(1, 0, 5));
  const std::string space =
      Space({Plane("/device:GPU:0", {Line("Stream #1", 0, events)}, {{1, "fusion"}})});
  ExpectRefused(Analyze(space, TraceFormat::kXSpace, limits), "max_trace_events");
}

TEST(TraceLimits, DistinctNamesAndTheirBytes) {
  TraceLimits limits;
  limits.max_trace_names = 50;
  ExpectRefused(Analyze(Kernels(60, "kernel_", true), TraceFormat::kKinetoJson, limits),
                "max_trace_names");
  EXPECT_TRUE(Analyze(Kernels(60, "kernel_", false), TraceFormat::kKinetoJson, limits).ok());

  // 20 distinct names of 64 KiB: 1.25 MiB of names, past a 1 MiB budget.
  limits = TraceLimits();
  limits.max_trace_name_mb = 1;
  std::string events;
  for (int i = 0; i < 20; ++i) {
    if (i > 0) events += ",";
    events += Kernel(absl::StrCat(i, std::string(64 << 10, 'n')), i * 10, 5);
  }
  ExpectRefused(Analyze(TraceWithEvents(events), TraceFormat::kKinetoJson, limits),
                "max_trace_name_mb");

  // XSpace event metadata names count too.
  limits = TraceLimits();
  limits.max_trace_names = 50;
  std::vector<Proto> metadata;
  for (int i = 0; i < 60; ++i) metadata.push_back(Metadata(i, absl::StrCat("op_", i)));
  const std::string space = Space({Plane("/device:GPU:0", {}, metadata, {})});
  ExpectRefused(Analyze(space, TraceFormat::kXSpace, limits), "max_trace_names");
}

TEST(TraceLimits, LongNamesAreCutOnACharacterBoundary) {
  TraceLimits limits;
  limits.max_name_bytes = 51;
  std::string name;
  for (int i = 0; i < 40; ++i) name += "\xc3\xa9";  // é: 80 bytes
  absl::StatusOr<TraceSummary> summary =
      Analyze(TraceWithEvents(Kernel(name, 0, 5)), TraceFormat::kKinetoJson, limits);
  ASSERT_TRUE(summary.ok()) << summary.status();
  ASSERT_EQ(summary->kernels.size(), 1u);
  EXPECT_EQ(summary->kernels[0].name, name.substr(0, 50));  // 25 whole characters
  EXPECT_EQ(summary->invalid_utf8_replacements, 0);
}

TEST(TraceLimits, NestingDepth) {
  TraceLimits limits;
  limits.max_trace_depth = 8;
  const std::string deep = TraceWithEvents(absl::StrCat(
      R"({"ph":"X","args":{"x":)", std::string(9, '['), std::string(9, ']'), "}}"));
  ExpectRefused(Analyze(deep, TraceFormat::kKinetoJson, limits), "max_trace_depth");
  limits.max_trace_depth = 200;  // deeper than 64 works too: the stack is not a bit mask
  const std::string deeper = TraceWithEvents(absl::StrCat(
      R"({"ph":"X","args":{"x":)", std::string(150, '['), std::string(150, ']'), "}}"));
  EXPECT_TRUE(Analyze(deeper, TraceFormat::kKinetoJson, limits).ok());
}

TEST(TraceLimits, StatsPerEventAndKeptStats) {
  TraceLimits limits;
  limits.max_event_stats = 4;
  std::vector<Proto> stats;
  for (int i = 0; i < 5; ++i) stats.push_back(IntStat(i, i));
  std::string space = Space({Plane("/device:GPU:0", {Line("Stream #1", 0, {Event(1, 0, 5, stats)})},
                                   {{1, "fusion"}})});
  ExpectRefused(Analyze(space, TraceFormat::kXSpace, limits), "max_event_stats");
  space = Space({Plane("/device:GPU:0", {}, {Metadata(1, "fusion", stats)}, {})});
  ExpectRefused(Analyze(space, TraceFormat::kXSpace, limits), "max_event_stats");

  // Each event a group of its own (a distinct text stat): the groups keep its stats.
  limits = TraceLimits();
  limits.max_trace_stats = 100;
  std::vector<Proto> events;
  for (int i = 0; i < 60; ++i) {
    events.push_back(Event(1, i * 10, 5, {StrStat(1, absl::StrCat("op", i)), IntStat(2, 1)}));
  }
  space = Space({Plane("/device:GPU:0", {Line("Stream #1", 0, events)}, {{1, "fusion"}})});
  ExpectRefused(Analyze(space, TraceFormat::kXSpace, limits), "max_trace_stats");
}

TEST(TraceLimits, ValidateNamesTheFlag) {
  TraceLimits limits;
  limits.max_trace_events = 0;
  EXPECT_THAT(limits.Validate().message(), HasSubstr("--max_trace_events=0 must be between 1 and"));
  absl::StatusOr<TraceSummary> summary = Analyze(Kernels(1, "k", false), TraceFormat::kKinetoJson, limits);
  EXPECT_EQ(summary.status().code(), absl::StatusCode::kInvalidArgument);
}

// Before: a kernel near +int64 and one near -int64 on one device gave span_ns overflow
// (negative, and an abort under UBSan). Now the trace is refused, naming the event's offset.
TEST(TraceTimes, OutOfRangeTimesRejectTheTraceWithTheOffset) {
  const int64_t big_us = std::numeric_limits<int64_t>::max() / 1000 - 10;
  const std::string first = Kernel("k", -big_us, 5);
  const std::string trace = TraceWithEvents(first + "," + Kernel("k", big_us, 5));
  absl::StatusOr<TraceSummary> summary = Analyze(trace, TraceFormat::kKinetoJson, TraceLimits());
  ASSERT_FALSE(summary.ok());
  EXPECT_EQ(summary.status().code(), absl::StatusCode::kInvalidArgument);
  const size_t offset = trace.find(first);
  EXPECT_THAT(summary.status().message(),
              HasSubstr(absl::StrCat("limits.trace: the event at byte ", offset, " (ts ")));
  EXPECT_THAT(summary.status().message(), HasSubstr("the trace is rejected"));

  // A ts beyond int64 altogether, and a memory sample: the same.
  summary = Analyze(TraceWithEvents(R"({"ph":"X","cat":"kernel","name":"k","ts":1e300,"dur":1,"pid":0})"),
                    TraceFormat::kKinetoJson, TraceLimits());
  EXPECT_THAT(summary.status().message(), HasSubstr("(ts 1e300 us)"));
  summary = Analyze(TraceWithEvents(
                        R"({"ph":"i","name":"[memory]","ts":9000000000000000,"args":{"Device Id":0,"Total Allocated":1}})"),
                    TraceFormat::kKinetoJson, TraceLimits());
  EXPECT_FALSE(summary.ok());
}

TEST(TraceTimes, ExtremesInsideTheRangeGiveExactSpansAndSaturatedSums) {
  // ±(2^62 - 1) ns is accepted: the span is 2^63 - 2 ns, still an int64.
  const std::string lo = R"({"ph":"X","cat":"kernel","name":"k","ts":-4611686018427387.903,"dur":0.001,"pid":0,"tid":7,"args":{"device":0}})";
  const std::string hi = R"({"ph":"X","cat":"kernel","name":"k","ts":4611686018427387.902,"dur":0.001,"pid":0,"tid":7,"args":{"device":0}})";
  absl::StatusOr<TraceSummary> summary =
      Analyze(TraceWithEvents(lo + "," + hi), TraceFormat::kKinetoJson, TraceLimits());
  ASSERT_TRUE(summary.ok()) << summary.status();
  ASSERT_EQ(summary->devices.size(), 1u);
  EXPECT_EQ(summary->devices[0].span_ns, std::numeric_limits<int64_t>::max() - 1);
  EXPECT_GT(summary->devices[0].idle_ns, 0);

  // Four kernels of 2^62 - 1 ns on four streams: their total exceeds int64 and saturates.
  std::string events;
  for (int stream = 0; stream < 4; ++stream) {
    if (stream > 0) events += ",";
    events += absl::StrCat(
        R"({"ph":"X","cat":"kernel","name":"long","ts":-4611686018427387.903,"dur":4611686018427387.903,"pid":0,"tid":)",
        stream, R"(,"args":{"device":0}})");
  }
  summary = Analyze(TraceWithEvents(events), TraceFormat::kKinetoJson, TraceLimits());
  ASSERT_TRUE(summary.ok()) << summary.status();
  ASSERT_EQ(summary->kernels.size(), 1u);
  EXPECT_EQ(summary->kernels[0].total_ns, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(summary->kernels[0].max_ns, 4611686018427387903);
}

TEST(TraceTimes, XSpaceLineTimestampOutOfRange) {
  const std::string space = Space({Plane(
      "/device:GPU:0", {Line("Stream #1", int64_t{1} << 62, {Event(1, 0, 5)})}, {{1, "fusion"}})});
  absl::StatusOr<TraceSummary> summary = Analyze(space, TraceFormat::kXSpace, TraceLimits());
  ASSERT_FALSE(summary.ok());
  EXPECT_THAT(summary.status().message(), HasSubstr("XLine.timestamp_ns 4611686018427387904"));
  // An offset that puts the event 2^62 ps past the first line.
  const std::string far = Space({Plane(
      "/device:GPU:0", {Line("Stream #1", 0, {Event(1, int64_t{1} << 62, 5)})}, {{1, "fusion"}})});
  summary = Analyze(far, TraceFormat::kXSpace, TraceLimits());
  ASSERT_FALSE(summary.ok());
  EXPECT_THAT(summary.status().message(), HasSubstr("lies outside the times fleetprof accepts"));
}

// Before: each step walked every busy interval inside it, so 400,000 steps that all span
// 400,000 disjoint kernels took 1.6e11 steps: 200,000 of each took 55 s in the release
// build, this size about four minutes, past the test's ctest TIMEOUT. Now 2 s.
TEST(QuadraticPaths, StepsThatAllSpanTheTrace) {
  constexpr int kKernels = 400000;
  constexpr int kSteps = 400000;
  std::string events;
  events.reserve(static_cast<size_t>(kKernels + kSteps) * 90);
  for (int i = 0; i < kKernels; ++i) {
    absl::StrAppend(&events, i > 0 ? "," : "", Kernel("k", int64_t{i} * 10, 5));
  }
  const int64_t end_us = int64_t{kKernels} * 10;
  for (int s = 0; s < kSteps; ++s) {
    absl::StrAppend(&events, R"(,{"ph":"X","cat":"user_annotation","name":"ProfilerStep#)", s,
                    R"(","ts":0,"dur":)", end_us, R"(,"pid":1,"tid":1})");
  }
  absl::StatusOr<TraceSummary> summary =
      Analyze(TraceWithEvents(events), TraceFormat::kKinetoJson, TraceLimits());
  ASSERT_TRUE(summary.ok()) << summary.status();
  ASSERT_EQ(summary->steps.size(), static_cast<size_t>(kSteps));
  for (const StepSummary& s : summary->steps) {
    ASSERT_EQ(s.device_busy_ns, int64_t{kKernels} * 5000);  // every kernel, exactly
    ASSERT_EQ(s.device_idle_ns, s.duration_ns - s.device_busy_ns);
  }
}

// Before: each numeric stat of an event searched the group's sums linearly: 1,000,000
// stats made 5e11 comparisons (far past the ctest TIMEOUT). Now linear.
TEST(QuadraticPaths, OneXSpaceEventWithManyStats) {
  constexpr int kStats = 1000000;
  std::vector<Proto> stats;
  stats.reserve(kStats);
  for (int i = 0; i < kStats; ++i) stats.push_back(IntStat(1000 + i, 1));
  const std::string space = Space({Plane(
      "/device:GPU:0", {Line("Stream #1", 0, {Event(1, 0, 5, stats)})}, {{1, "fusion"}})});
  TraceLimits limits;
  limits.max_event_stats = kStats;
  absl::StatusOr<TraceSummary> summary = Analyze(space, TraceFormat::kXSpace, limits);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->events, 1);
}

}  // namespace
}  // namespace fleetprof::analysis
