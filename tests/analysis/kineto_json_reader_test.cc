// Bad and unusual Chrome-trace input: each case ends in a clear error (source, byte offset,
// what was expected) or in a documented skipped count; never a crash or a hang.

#include "analysis/kineto_json_reader.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "analysis/byte_source.h"
#include "analysis/trace_analyzer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/analysis/analysis_test_util.h"

namespace fleetprof::analysis {
namespace {

using testing::AnalyzeJson;
using testing::FindOp;
using ::testing::HasSubstr;
using testing::TraceWithEvents;

const char kGoodEvent[] =
    R"({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10.5, "dur": 2})";

// Produces `prefix`, then `fill_bytes` copies of `fill`, then `suffix`, without ever
// holding the whole text: the way to feed a 100 MB string cheaply.
class GeneratedSource : public ByteSource {
 public:
  GeneratedSource(std::string prefix, char fill, size_t fill_bytes, std::string suffix)
      : prefix_(std::move(prefix)),
        fill_(fill),
        fill_bytes_(fill_bytes),
        suffix_(std::move(suffix)) {}

  absl::StatusOr<size_t> Read(char* buf, size_t n) override {
    size_t total = prefix_.size() + fill_bytes_ + suffix_.size();
    size_t done = 0;
    while (done < n && pos_ < total) {
      size_t take;
      if (pos_ < prefix_.size()) {
        take = std::min(n - done, prefix_.size() - pos_);
        std::memcpy(buf + done, prefix_.data() + pos_, take);
      } else if (pos_ < prefix_.size() + fill_bytes_) {
        take = std::min(n - done, prefix_.size() + fill_bytes_ - pos_);
        std::memset(buf + done, fill_, take);
      } else {
        size_t at = pos_ - prefix_.size() - fill_bytes_;
        take = std::min(n - done, suffix_.size() - at);
        std::memcpy(buf + done, suffix_.data() + at, take);
      }
      done += take;
      pos_ += take;
    }
    return done;
  }
  const std::string& name() const override { return name_; }

 private:
  std::string name_ = "generated.json";
  std::string prefix_;
  char fill_;
  size_t fill_bytes_;
  std::string suffix_;
  size_t pos_ = 0;
};

int64_t PeakRssKiB() {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

TEST(KinetoJsonReader, RejectsTruncatedJsonWithOffset) {
  std::string text = TraceWithEvents(absl::StrCat(kGoodEvent, ",", kGoodEvent));
  for (size_t cut : {text.size() - 1, text.size() / 2, size_t{1}}) {
    absl::StatusOr<TraceSummary> summary = AnalyzeJson(text.substr(0, cut));
    ASSERT_FALSE(summary.ok()) << "cut at " << cut;
    EXPECT_THAT(
        summary.status().message(),
        HasSubstr(absl::StrCat("test.json: unexpected end of input at byte ", cut, ", expected")));
  }
  absl::StatusOr<TraceSummary> empty = AnalyzeJson("");
  ASSERT_FALSE(empty.ok());
  EXPECT_THAT(empty.status().message(), HasSubstr("at byte 0, expected '{' or '['"));
}

TEST(KinetoJsonReader, RejectsTextThatIsNotJsonWithOffset) {
  absl::StatusOr<TraceSummary> summary = AnalyzeJson(R"({"traceEvents": [{"ph": "X" "ts": 1}]})");
  ASSERT_FALSE(summary.ok());
  EXPECT_THAT(summary.status().message(),
              HasSubstr("unexpected '\"' at byte 28, expected ',' or '}'"));
  summary = AnalyzeJson("hello");
  ASSERT_FALSE(summary.ok());
  EXPECT_THAT(summary.status().message(), HasSubstr("unexpected 'h' at byte 0"));
  summary = AnalyzeJson(TraceWithEvents(kGoodEvent) + " trailing");
  ASSERT_FALSE(summary.ok());
  EXPECT_THAT(summary.status().message(), HasSubstr("expected end of input"));
}

// Issue 21: any JSON object used to be stored as a 0-event trace, so a credentials file a job
// pointed the agent at came back through export. An object needs its "traceEvents" array.
TEST(KinetoJsonReader, RefusesJsonThatIsNoTrace) {
  for (const std::string text : {R"({})", R"({"aws_secret_access_key": "x"})", R"({"traceEvents": 5})",
                                 R"({"traceEvents": {"ph": "X"}})"}) {
    absl::StatusOr<TraceSummary> summary = AnalyzeJson(text);
    ASSERT_FALSE(summary.ok()) << text;
    EXPECT_TRUE(absl::IsInvalidArgument(summary.status())) << summary.status();
    EXPECT_NE(summary.status().message().find("not a Chrome/Kineto trace"), absl::string_view::npos)
        << summary.status();
  }
  // Empty event lists and bare arrays (the legacy autograd export) are still traces.
  EXPECT_TRUE(AnalyzeJson(R"({"traceEvents": []})").ok());
  EXPECT_TRUE(AnalyzeJson(R"([])").ok());
}

TEST(KinetoJsonReader, SkipsEventsWithWrongValueTypes) {
  absl::StatusOr<TraceSummary> summary = AnalyzeJson(TraceWithEvents(absl::StrCat(
      kGoodEvent, ",",
      R"({"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": "abc", "dur": 1},)",
      R"({"ph": "X", "cat": "cpu_op", "name": "b", "pid": 1, "tid": 1, "ts": 1, "dur": [1]},)",
      R"({"ph": "X", "cat": "cpu_op", "name": 7, "pid": 1, "tid": 1, "ts": 1, "dur": 1},)",
      R"({"ph": "X", "cat": ["cpu_op"], "name": "c", "pid": 1, "tid": 1, "ts": 1, "dur": 1},)",
      R"({"ph": "X", "cat": "cpu_op", "name": "d", "pid": {}, "tid": 1, "ts": 1, "dur": 1},)",
      R"({"ph": "X", "cat": "cpu_op", "name": "e", "pid": 1, "tid": 1, "ts": true, "dur": 1},)",
      R"({"ph": 1, "name": "f"},)", R"("not an event", 42, null)")));
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->events, 11);
  EXPECT_EQ(summary->skipped_events, 10);
  ASSERT_EQ(summary->ops.size(), 1u);
  EXPECT_EQ(summary->ops[0].name, "aten::mm");
}

// Times outside the accepted range reject the whole trace instead (trace_limits_test).
TEST(KinetoJsonReader, SkipsNegativeAndNaNDurations) {
  absl::StatusOr<TraceSummary> summary = AnalyzeJson(TraceWithEvents(absl::StrCat(
      kGoodEvent, ",",
      R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": -1},)",
      R"({"ph": "X", "cat": "cpu_op", "name": "n", "pid": 1, "tid": 1, "ts": 1, "dur": NaN},)",
      R"({"ph": "X", "cat": "cpu_op", "name": "i", "pid": 1, "tid": 1, "ts": 1, "dur": Infinity},)",
      R"({"ph": "X", "cat": "cpu_op", "name": "s", "pid": 1, "tid": 1, "ts": 1, "dur": "NaN"})")));
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->skipped_events, 4);
  EXPECT_TRUE(summary->devices.empty());
  EXPECT_EQ(summary->ops.size(), 1u);
}

TEST(KinetoJsonReader, SkipsEventsWithMissingFields) {
  absl::StatusOr<TraceSummary> summary = AnalyzeJson(TraceWithEvents(absl::StrCat(
      kGoodEvent, ",",
      R"({"ph": "X", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": 1, "dur": 1},)",      // no name
      R"({"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "dur": 1},)",  // no ts
      R"({"ph": "X", "cat": "cpu_op", "name": "b", "pid": 1, "tid": 1, "ts": 1},)",   // no dur
      R"({"cat": "cpu_op", "name": "c", "pid": 1, "tid": 1, "ts": 1, "dur": 1},)",    // no ph
      R"({"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1},)",             // no device
      R"({"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": 1, "args": {"Bytes": 4}},)",
      R"({},)", R"({"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "python"}})")));
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->events, 9);
  EXPECT_EQ(summary->skipped_events, 7);  // the metadata event is not analysed, not skipped
}

TEST(KinetoJsonReader, CountsUnknownCategoriesAndAnalysesThemAsHostEvents) {
  absl::StatusOr<TraceSummary> summary = AnalyzeJson(TraceWithEvents(absl::StrCat(
      kGoodEvent, ",",
      R"({"ph": "X", "cat": "brand_new_category", "name": "mystery", "pid": 1, "tid": 1, "ts": 20, "dur": 3})")));
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->unknown_category_events, 1);
  EXPECT_EQ(summary->skipped_events, 0);
  ASSERT_NE(FindOp(*summary, "mystery"), nullptr);  // docs/analysis.md, Host events: every other X event
  EXPECT_EQ(FindOp(*summary, "mystery")->total_ns, 3000);
}

TEST(KinetoJsonReader, Handles100MBStringsWithoutHoldingThem) {
  constexpr size_t kHuge = 100u << 20;
  const int64_t rss_before = PeakRssKiB();
  // A 100 MB name (kept, truncated) followed by a 100 MB argument (skipped).
  GeneratedSource name_source(
      R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": 1, "dur": 2, "name": ")",
      'n', kHuge, R"("}]})");
  absl::StatusOr<TraceSummary> summary = AnalyzeTrace(name_source, TraceFormat::kKinetoJson);
  ASSERT_TRUE(summary.ok()) << summary.status();
  ASSERT_EQ(summary->ops.size(), 1u);
  EXPECT_EQ(summary->ops[0].name, std::string(static_cast<size_t>(TraceLimits().max_name_bytes), 'n'));

  GeneratedSource arg_source(
      absl::StrCat(R"({"traceEvents": [)", kGoodEvent, R"(, {"ph": "M", "args": {"blob": ")"), 'x',
      kHuge, R"("}}]})");
  summary = AnalyzeTrace(arg_source, TraceFormat::kKinetoJson);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->events, 2);
  EXPECT_LT(PeakRssKiB() - rss_before, 32 * 1024) << "memory grew with the string size";
}

TEST(KinetoJsonReader, RejectsDeepNestingWithClearError) {
  constexpr int kDepth = 10000;
  std::string text = absl::StrCat(R"({"traceEvents": [{"ph": "X", "args": )",
                                  std::string(kDepth, '['), std::string(kDepth, ']'), "}]}");
  absl::StatusOr<TraceSummary> summary = AnalyzeJson(text);
  ASSERT_FALSE(summary.ok());
  EXPECT_THAT(summary.status().message(), HasSubstr("more than 64 levels of JSON nesting (at byte"));

  // The same depth as the bare top-level array and as a truncated document.
  summary = AnalyzeJson(std::string(kDepth, '['));
  ASSERT_FALSE(summary.ok());
  EXPECT_THAT(summary.status().message(), HasSubstr("raise --max_trace_depth"));
  summary = AnalyzeJson(R"({"traceEvents": [], "x": )" + std::string(kDepth, '{'));
  ASSERT_FALSE(summary.ok());
}

TEST(KinetoJsonReader, RejectsMismatchedBracketsInSkippedValues) {
  absl::StatusOr<TraceSummary> summary =
      AnalyzeJson(R"({"traceEvents": [{"ph": "X", "args": {"a": [1, 2}}]})");
  ASSERT_FALSE(summary.ok());
  EXPECT_THAT(summary.status().message(), HasSubstr("unexpected '}' at byte 48, expected ']'"));
}

TEST(KinetoJsonReader, ReadsBareArrayLegacyForm) {
  absl::StatusOr<TraceSummary> summary = AnalyzeJson(absl::StrCat("[", kGoodEvent, "]"));
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->format, TraceFormat::kKinetoJson);
  ASSERT_EQ(summary->ops.size(), 1u);
  EXPECT_EQ(summary->start_ns, 10500);
  EXPECT_EQ(summary->end_ns, 12500);
}

TEST(KinetoJsonReader, ReadsDistributedInfoAndDevicePropertiesIntoMetadata) {
  absl::StatusOr<TraceSummary> summary = AnalyzeJson(absl::StrCat(
      R"({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA A100", "totalGlobalMem": 42297524224}],)",
      R"( "distributedInfo": {"backend": "nccl", "rank": 3, "world_size": 8, "pg_config": [{"x": 1}]},)",
      R"( "baseTimeNanoseconds": 1700000000000000000, "traceEvents": [)", kGoodEvent, "]}"));
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->metadata["rank"], "3");
  EXPECT_EQ(summary->metadata["world_size"], "8");
  EXPECT_EQ(summary->metadata["backend"], "nccl");
  EXPECT_EQ(summary->metadata["device.0.name"], "NVIDIA A100");
  EXPECT_EQ(summary->metadata["schema_version"], "1");
  EXPECT_EQ(summary->metadata.count("pg_config"), 0u);
  // baseTimeNanoseconds does not shift the clock.
  EXPECT_EQ(summary->start_ns, 10500);
}

TEST(KinetoJsonReader, UnescapesNames) {
  absl::StatusOr<TraceSummary> summary = AnalyzeJson(TraceWithEvents(
      R"({"ph": "X", "cat": "cpu_op", "name": "a\"b\\c\u00e9\ud83d\ude00\n", "pid": 1, "tid": 1, "ts": 0, "dur": 1})"));
  ASSERT_TRUE(summary.ok()) << summary.status();
  ASSERT_EQ(summary->ops.size(), 1u);
  EXPECT_EQ(summary->ops[0].name, "a\"b\\c\xC3\xA9\xF0\x9F\x98\x80\n");
  // The same name delivered a byte at a time.
  absl::StatusOr<TraceSummary> bytewise = AnalyzeJson(
      TraceWithEvents(
          R"({"ph": "X", "cat": "cpu_op", "name": "a\"b\\c\u00e9\ud83d\ude00\n", "pid": 1, "tid": 1, "ts": 0, "dur": 1})"),
      1);
  ASSERT_TRUE(bytewise.ok()) << bytewise.status();
  EXPECT_EQ(bytewise->ops[0].name, summary->ops[0].name);
}

TEST(KinetoJsonReader, RejectsInvalidEscapes) {
  absl::StatusOr<TraceSummary> summary =
      AnalyzeJson(TraceWithEvents(R"({"ph": "X", "name": "bad\q", "ts": 0, "dur": 1})"));
  ASSERT_FALSE(summary.ok());
  EXPECT_THAT(summary.status().message(), HasSubstr("invalid escape"));
}

TEST(KinetoJsonReader, ClassifiesCurrentAnd2021DeviceCategories) {
  absl::StatusOr<TraceSummary> summary = AnalyzeJson(TraceWithEvents(
      R"j({"ph": "X", "cat": "Kernel", "name": "ncclAllReduce_sum", "pid": 0, "tid": "stream 7", "ts": 0, "dur": 4, "args": {"device": 0, "stream": 7}},)j"
      R"j({"ph": "X", "cat": "Memset", "name": "Memset (Device)", "pid": 0, "tid": "stream 7", "ts": 2, "dur": 4, "args": {"device": 0}},)j"
      R"j({"ph": "X", "cat": "kernel", "name": "gemm", "pid": 5, "tid": 1, "ts": 0, "dur": 1, "args": {"device": 1}},)j"
      R"j({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH", "pid": 2, "tid": 1, "ts": 0, "dur": 1})j"));
  ASSERT_TRUE(summary.ok()) << summary.status();
  ASSERT_EQ(summary->devices.size(), 3u);
  const DeviceSummary* d0 = testing::FindDevice(*summary, "0");
  ASSERT_NE(d0, nullptr);
  EXPECT_EQ(d0->communication_ns, 4000);
  EXPECT_EQ(d0->memory_ns, 4000);
  EXPECT_EQ(d0->busy_ns, 6000);
  EXPECT_EQ(d0->span_ns, 6000);
  EXPECT_EQ(d0->idle_ns, 0);
  EXPECT_NE(testing::FindDevice(*summary, "1"), nullptr);  // args.device wins over pid
  EXPECT_NE(testing::FindDevice(*summary, "2"), nullptr);  // pid when args.device is absent
  EXPECT_EQ(testing::FindKernel(*summary, "ncclAllReduce_sum")->kind, ActivityKind::kCommunication);
  EXPECT_EQ(testing::FindKernel(*summary, "Memset (Device)")->kind, ActivityKind::kMemory);
  EXPECT_TRUE(summary->ops.empty());
}

TEST(TraceAnalyzer, DetectsFormatFromNameThenBytes) {
  EXPECT_EQ(DetectTraceFormat("a.xplane.pb", ""), TraceFormat::kXSpace);
  EXPECT_EQ(DetectTraceFormat("a.pt.trace.json.gz", ""), TraceFormat::kKinetoJson);
  EXPECT_EQ(DetectTraceFormat("a.json", ""), TraceFormat::kKinetoJson);
  EXPECT_EQ(DetectTraceFormat("upload", "  \n{\"traceEvents\""), TraceFormat::kKinetoJson);
  EXPECT_EQ(DetectTraceFormat("upload", "[{"), TraceFormat::kKinetoJson);
  EXPECT_EQ(DetectTraceFormat("upload", "\x0a\x05"), TraceFormat::kXSpace);
  EXPECT_EQ(DetectTraceFormat("upload", "hello"), TraceFormat::kUnknown);
}

TEST(TraceAnalyzer, ReportsMissingFileByName) {
  absl::StatusOr<TraceSummary> summary = AnalyzeTraceFile("/nonexistent/trace.json.gz");
  ASSERT_FALSE(summary.ok());
  EXPECT_EQ(summary.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(summary.status().message(), HasSubstr("/nonexistent/trace.json.gz"));
}

TEST(TraceAnalyzer, NamesFormatsAndKinds) {
  EXPECT_STREQ(TraceFormatName(TraceFormat::kKinetoJson), "kineto_json");
  EXPECT_EQ(TraceFormatFromName("xspace"), TraceFormat::kXSpace);
  EXPECT_EQ(TraceFormatFromName("nope"), TraceFormat::kUnknown);
  ActivityKind kind;
  EXPECT_TRUE(ActivityKindFromName("communication", &kind));
  EXPECT_EQ(kind, ActivityKind::kCommunication);
  EXPECT_STREQ(ActivityKindName(ActivityKind::kMemory), "memory");
  EXPECT_FALSE(ActivityKindFromName("gpu", &kind));
}

}  // namespace
}  // namespace fleetprof::analysis
