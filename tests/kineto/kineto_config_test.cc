// The pure parts of the Kineto protocol: config text, trace file names, payload decoding.
#include <cstring>
#include <string>

#include "collectors/kineto_endpoint.h"
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
  EXPECT_EQ(KinetoEndpoint::BuildConfig(request),
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
  const std::string config = KinetoEndpoint::BuildConfig(request);
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
  const std::string config = KinetoEndpoint::BuildConfig(KinetoTraceRequest{});
  EXPECT_NE(config.find("ACTIVITIES_DURATION_MSECS=500\n"), std::string::npos) << config;
  EXPECT_NE(config.find("PROFILE_START_TIME=0\n"), std::string::npos) << config;
  EXPECT_EQ(config.find("ACTIVITIES_LOG_FILE"), std::string::npos) << config;
}

TEST(KinetoConfig, NewlinesInValuesCannotInjectKeys) {
  KinetoTraceRequest request;
  request.log_file = "/tmp/a.json\nACTIVITIES_DURATION_MSECS=999999";
  request.trace_id = "x\r\nPROFILE_WITH_STACK=true";
  const std::string config = KinetoEndpoint::BuildConfig(request);
  EXPECT_EQ(config.find("\nACTIVITIES_DURATION_MSECS=999999"), std::string::npos) << config;
  EXPECT_EQ(config.find("\nPROFILE_WITH_STACK=true"), std::string::npos) << config;
  EXPECT_EQ(KinetoEndpoint::LogFileOf(config), "/tmp/a.jsonACTIVITIES_DURATION_MSECS=999999");
}

TEST(KinetoConfig, TracePathInsertsPidLikeLibkineto) {
  EXPECT_EQ(KinetoEndpoint::TracePathFor("/tmp/x.pt.trace.json", 123), "/tmp/x_123.pt.trace.json");
  EXPECT_EQ(KinetoEndpoint::TracePathFor("/tmp/y.json", 7), "/tmp/y_7.json");
  EXPECT_EQ(KinetoEndpoint::TracePathFor("/tmp/dir.json/z.json", 7), "/tmp/dir_7.json/z.json");
  EXPECT_EQ(KinetoEndpoint::TracePathFor("/tmp/trace", 7), "/tmp/trace");
}

TEST(KinetoConfig, LogFileIsReadBackFromConfigText) {
  EXPECT_EQ(KinetoEndpoint::LogFileOf("PROFILE_START_TIME=0\nACTIVITIES_LOG_FILE = /tmp/a.json \n"),
            "/tmp/a.json");
  EXPECT_EQ(KinetoEndpoint::LogFileOf("ACTIVITIES_LOG_FILE=/a.json\nACTIVITIES_LOG_FILE=/b.json"),
            "/b.json");
  EXPECT_EQ(KinetoEndpoint::LogFileOf("ACTIVITIES_DURATION_MSECS=5"), "");
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
