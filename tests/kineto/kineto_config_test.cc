// The pure parts of the Kineto protocol: config text, trace file names, payload decoding.
#include <cstring>
#include <string>

#include "collectors/kineto_config.h"
#include "collectors/kineto_ipc.h"
#include "gtest/gtest.h"

namespace fleetprof {
namespace {

std::string PollPayload(int32_t type, int32_t n, int64_t job_id, const std::vector<int32_t>& pids) {
  std::string payload(16 + 4 * pids.size(), '\0');
  std::memcpy(payload.data(), &type, 4);
  std::memcpy(payload.data() + 4, &n, 4);
  std::memcpy(payload.data() + 8, &job_id, 8);
  if (!pids.empty()) std::memcpy(payload.data() + 16, pids.data(), 4 * pids.size());
  return payload;
}

TEST(KinetoConfig, DurationTraceHasStartTimeAndDuration) {
  KinetoTraceRequest request;
  request.log_file = "/tmp/fleetprof/job.pt.trace.json";
  request.duration_ms = 2000;
  request.start_time_unix_ms = 1700000000123;
  request.record_shapes = true;
  request.with_stack = true;
  request.trace_id = "cap-42";
  EXPECT_EQ(BuildKinetoConfig(request),
            "ACTIVITIES_LOG_FILE=/tmp/fleetprof/job.pt.trace.json\n"
            "PROFILE_START_TIME=1700000000123\n"
            "ACTIVITIES_DURATION_MSECS=2000\n"
            "PROFILE_REPORT_INPUT_SHAPES=true\n"
            "PROFILE_PROFILE_MEMORY=false\n"
            "PROFILE_WITH_STACK=true\n"
            "PROFILE_WITH_FLOPS=false\n"
            "PROFILE_WITH_MODULES=false\n"
            "REQUEST_TRACE_ID=cap-42\n");
}

TEST(KinetoConfig, IterationTraceStartsAtNextIterationBoundary) {
  KinetoTraceRequest request;
  request.log_file = "/tmp/t.json";
  request.iterations = 5;
  request.duration_ms = 999;  // ignored: iterations win
  request.profile_memory = request.with_flops = request.with_modules = true;
  const std::string config = BuildKinetoConfig(request);
  EXPECT_NE(config.find("ACTIVITIES_ITERATIONS=5\n"), std::string::npos) << config;
  EXPECT_NE(config.find("PROFILE_START_ITERATION=0\n"), std::string::npos) << config;
  EXPECT_NE(config.find("PROFILE_START_ITERATION_ROUNDUP=1\n"), std::string::npos) << config;
  EXPECT_EQ(config.find("ACTIVITIES_DURATION_MSECS"), std::string::npos) << config;
  EXPECT_EQ(config.find("PROFILE_START_TIME"), std::string::npos) << config;
  EXPECT_NE(config.find("PROFILE_PROFILE_MEMORY=true\n"), std::string::npos) << config;
  EXPECT_NE(config.find("PROFILE_WITH_FLOPS=true\n"), std::string::npos) << config;
  EXPECT_NE(config.find("PROFILE_WITH_MODULES=true\n"), std::string::npos) << config;
  EXPECT_EQ(config.find("REQUEST_TRACE_ID"), std::string::npos) << config;
}

TEST(KinetoConfig, NoDurationMeansDynoDefaultOf500Ms) {
  const std::string config = BuildKinetoConfig(KinetoTraceRequest{});
  EXPECT_NE(config.find("ACTIVITIES_DURATION_MSECS=500\n"), std::string::npos) << config;
  EXPECT_NE(config.find("PROFILE_START_TIME=0\n"), std::string::npos) << config;
  EXPECT_EQ(config.find("ACTIVITIES_LOG_FILE"), std::string::npos) << config;
}

TEST(KinetoConfig, NewlinesInValuesCannotInjectKeys) {
  KinetoTraceRequest request;
  request.log_file = "/tmp/a.json\nACTIVITIES_DURATION_MSECS=999999";
  request.trace_id = "x\r\nPROFILE_WITH_STACK=true";
  const std::string config = BuildKinetoConfig(request);
  EXPECT_EQ(config.find("\nACTIVITIES_DURATION_MSECS=999999"), std::string::npos) << config;
  EXPECT_EQ(config.find("\nPROFILE_WITH_STACK=true"), std::string::npos) << config;
  EXPECT_EQ(config.rfind("ACTIVITIES_LOG_FILE=/tmp/a.jsonACTIVITIES_DURATION_MSECS=999999\n", 0), 0u) << config;
  // And the strict reading refuses what came out (a second '='): nothing names a log file.
  EXPECT_FALSE(ParseKinetoConfig(config).ok());
}

TEST(KinetoConfig, TracePathInsertsPidLikeLibkineto) {
  EXPECT_EQ(KinetoTracePath("/tmp/x.pt.trace.json", 123), "/tmp/x_123.pt.trace.json");
  EXPECT_EQ(KinetoTracePath("/tmp/y.json", 7), "/tmp/y_7.json");
  EXPECT_EQ(KinetoTracePath("/tmp/dir.json/z.json", 7), "/tmp/dir_7.json/z.json");
  EXPECT_EQ(KinetoTracePath("/tmp/trace", 7), "/tmp/trace");
}

TEST(KinetoConfig, ADynoRequestIsReadBackIntoTheSameRequest) {
  // What `dyno gputrace` sends, in both modes, with a comment and blanks around the values.
  absl::StatusOr<KinetoTraceRequest> duration = ParseKinetoConfig(
      "# dyno\n ACTIVITIES_LOG_FILE = /tmp/a.json \nPROFILE_START_TIME=1700000000123\n"
      "ACTIVITIES_DURATION_MSECS=2000\nPROFILE_REPORT_INPUT_SHAPES=true\nPROFILE_PROFILE_MEMORY=False\n"
      "PROFILE_WITH_STACK=true\nPROFILE_WITH_FLOPS=false\nPROFILE_WITH_MODULES=false\n\n");
  ASSERT_TRUE(duration.ok()) << duration.status();
  EXPECT_EQ(duration->log_file, "/tmp/a.json");
  EXPECT_EQ(duration->start_time_unix_ms, 1700000000123);
  EXPECT_EQ(duration->duration_ms, 2000);
  EXPECT_TRUE(duration->record_shapes && duration->with_stack);
  EXPECT_FALSE(duration->profile_memory || duration->with_flops || duration->with_modules);

  absl::StatusOr<KinetoTraceRequest> iterations = ParseKinetoConfig(
      "ACTIVITIES_LOG_FILE=/tmp/b.json\nPROFILE_START_ITERATION=0\nPROFILE_START_ITERATION_ROUNDUP=10\n"
      "ACTIVITIES_ITERATIONS=3\nREQUEST_TRACE_ID=abc-1\nREQUEST_GROUP_TRACE_ID=g.2\nACTIVITIES_WARMUP_PERIOD_SECS=5");
  ASSERT_TRUE(iterations.ok()) << iterations.status();
  const std::string rebuilt = BuildKinetoConfig(*iterations);
  EXPECT_EQ(rebuilt,
            "ACTIVITIES_LOG_FILE=/tmp/b.json\nPROFILE_START_ITERATION=0\nPROFILE_START_ITERATION_ROUNDUP=10\n"
            "ACTIVITIES_ITERATIONS=3\nACTIVITIES_WARMUP_PERIOD_SECS=5\nPROFILE_REPORT_INPUT_SHAPES=false\n"
            "PROFILE_PROFILE_MEMORY=false\nPROFILE_WITH_STACK=false\nPROFILE_WITH_FLOPS=false\n"
            "PROFILE_WITH_MODULES=false\nREQUEST_TRACE_ID=abc-1\nREQUEST_GROUP_TRACE_ID=g.2\n");
  // Our own configs read back to what built them.
  absl::StatusOr<KinetoTraceRequest> again = ParseKinetoConfig(rebuilt);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(BuildKinetoConfig(*again), rebuilt);
}

TEST(KinetoConfig, DynoProfileMemoryKeysAreAcceptedAndHandedOn) {
  // `dyno gputrace --profile-memory` (issue 38): a memory snapshot instead of a trace.
  absl::StatusOr<KinetoTraceRequest> memory = ParseKinetoConfig(
      "ACTIVITIES_LOG_FILE=/tmp/m.json\nPROFILE_START_TIME=0\nACTIVITIES_DURATION_MSECS=500\n"
      "PROFILE_PROFILE_MEMORY=true\nPROFILE_MEMORY=true\nPROFILE_MEMORY_DURATION_MSECS=500");
  ASSERT_TRUE(memory.ok()) << memory.status();
  EXPECT_TRUE(memory->profile_memory);
  EXPECT_TRUE(memory->memory_snapshot);
  EXPECT_EQ(memory->memory_duration_ms, 500);
  const std::string rebuilt = BuildKinetoConfig(*memory);
  EXPECT_NE(rebuilt.find("\nPROFILE_MEMORY=true\nPROFILE_MEMORY_DURATION_MSECS=500\n"), std::string::npos) << rebuilt;
  absl::StatusOr<KinetoTraceRequest> again = ParseKinetoConfig(rebuilt);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(BuildKinetoConfig(*again), rebuilt);
  // Checked like every other key.
  EXPECT_FALSE(ParseKinetoConfig("PROFILE_MEMORY=yes").ok());
  EXPECT_FALSE(ParseKinetoConfig("PROFILE_MEMORY_DURATION_MSECS=0").ok());
  EXPECT_FALSE(ParseKinetoConfig("PROFILE_MEMORY_DURATION_MSECS=-5").ok());
  EXPECT_FALSE(ParseKinetoConfig("PROFILE_MEMORY=true\nPROFILE_MEMORY=true").ok());
  // Without the keys nothing of them is written.
  EXPECT_EQ(BuildKinetoConfig(KinetoTraceRequest{}).find("\nPROFILE_MEMORY"), std::string::npos);
}

TEST(KinetoConfig, AnythingLibkinetoCouldReadDifferentlyIsRefusedNamingTheLine) {
  const std::pair<std::string, std::string> refused[] = {
      {"ACTIVITIES_LOG_FILE=/etc/x.json\n\vACTIVITIES_LOG_FILE=/tmp/a.json", "line 2: holds the control character \\x0b"},
      {"ACTIVITIES_LOG_FILE=/tmp/a.json\r\n", "line 1: holds the control character \\x0d"},
      {std::string("ACTIVITIES_LOG_FILE=/tmp/a\0.json", 32), "control character \\x00"},
      {"ACTIVITIES_LOG_FILE=/tmp/a.json\nACTIVITIES_LOG_FILE=/tmp/b.json", "line 2: ACTIVITIES_LOG_FILE is given twice"},
      {"ACTIVITIES_LOG_FILE=/tmp/a.json#x", "'#' after text"},
      {"ACTIVITIES_LOG_FILE=/tmp/a.json=b", "second '='"},
      {"ACTIVITIES_LOG_FILE", "not KEY=VALUE"},
      {"activities_log_file=/tmp/a.json", "is not A-Z 0-9 _"},
      {"ACTIVITIES_ENABLED_ACTIVITY_TYPES=cpu_op", "unknown key ACTIVITIES_ENABLED_ACTIVITY_TYPES"},
      {"ACTIVITIES_DURATION_MSECS=-5", "whole number in 1..3600000"},
      {"ACTIVITIES_DURATION_MSECS=0x10", "whole number"},
      {"ACTIVITIES_DURATION_MSECS=99999999999999999999", "whole number"},
      {"PROFILE_WITH_STACK=yes", "true or false"},
      {"ACTIVITIES_LOG_FILE=/tmp/a b.json", "space"},
      {"ACTIVITIES_LOG_FILE=/tmp/\xc3\xa9.json", "outside ASCII"},
      {"ACTIVITIES_ITERATIONS=3\nACTIVITIES_DURATION_MSECS=5", "choose one"},
      {"PROFILE_START_ITERATION=3", "need ACTIVITIES_ITERATIONS"},
      {"REQUEST_TRACE_ID=" + std::string(129, 'a'), "1..128 characters"},
  };
  for (const auto& [config, why] : refused) {
    absl::StatusOr<KinetoTraceRequest> parsed = ParseKinetoConfig(config);
    ASSERT_FALSE(parsed.ok()) << config;
    EXPECT_TRUE(absl::IsInvalidArgument(parsed.status())) << parsed.status();
    EXPECT_NE(parsed.status().message().find(why), absl::string_view::npos) << config << " -> " << parsed.status();
  }
}

TEST(KinetoConfig, ControlCharactersInBuiltValuesAreDropped) {
  KinetoTraceRequest request;
  request.log_file = "/tmp/a.json";
  request.trace_id = "id\v\f\x01-1";
  EXPECT_NE(BuildKinetoConfig(request).find("REQUEST_TRACE_ID=id-1\n"), std::string::npos);
}

TEST(KinetoPayload, PollDecodesTypeJobAndAncestry) {
  absl::StatusOr<KinetoPoll> poll = ParseKinetoPoll(PollPayload(2, 3, 77, {30, 20, 1}));
  ASSERT_TRUE(poll.ok()) << poll.status();
  EXPECT_EQ(poll->type, 2);
  EXPECT_EQ(poll->job_id, 77);
  EXPECT_EQ(poll->pids, (std::vector<int32_t>{30, 20, 1}));
}

TEST(KinetoPayload, PollWhoseCountDisagreesWithItsSizeIsRejected) {
  EXPECT_FALSE(ParseKinetoPoll(PollPayload(2, 4, 0, {1, 2, 3})).ok());
  EXPECT_FALSE(ParseKinetoPoll(PollPayload(2, 2, 0, {1, 2, 3})).ok());
  EXPECT_FALSE(ParseKinetoPoll(PollPayload(2, 0, 0, {})).ok());
  EXPECT_FALSE(ParseKinetoPoll(PollPayload(2, -1, 0, {})).ok());
  EXPECT_FALSE(ParseKinetoPoll(PollPayload(2, 0x7fffffff, 0, {1})).ok());
  EXPECT_FALSE(ParseKinetoPoll(std::string(15, '\0')).ok());
}

TEST(KinetoPayload, ContextMustBeSixteenBytes) {
  std::string payload(16, '\0');
  const int32_t gpu = 3, pid = 99;
  const int64_t job = 5;
  std::memcpy(payload.data(), &gpu, 4);
  std::memcpy(payload.data() + 4, &pid, 4);
  std::memcpy(payload.data() + 8, &job, 8);
  absl::StatusOr<KinetoContext> context = ParseKinetoContext(payload);
  ASSERT_TRUE(context.ok()) << context.status();
  EXPECT_EQ(context->gpu, 3);
  EXPECT_EQ(context->pid, 99);
  EXPECT_EQ(context->job_id, 5);
  EXPECT_FALSE(ParseKinetoContext(payload + "x").ok());
  EXPECT_FALSE(ParseKinetoContext(payload.substr(0, 12)).ok());
}

}  // namespace
}  // namespace fleetprof
