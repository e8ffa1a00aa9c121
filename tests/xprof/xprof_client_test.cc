// CaptureXprof against a real stand-in profiler server (profiler_standin.py, a separate Python
// process serving tensorflow.ProfilerService), covering each way a JAX/TF job can answer.

#include "collectors/job_network.h"
#include "collectors/xprof_client.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "gtest/gtest.h"
#include "tests/test_support.h"
#include "tests/xprof/profiler_standin_process.h"

namespace fleetprof {
namespace {

namespace fs = std::filesystem;
using ::fleetprof::testing::ProfilerStandIn;
using ::fleetprof::testing::StandInOptions;
using Clock = std::chrono::steady_clock;

std::string CorpusXSpace() {
  return ::fleetprof::testing::CorpusPath("xspace/tf_8gpu_multi_worker.xplane.pb");
}

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

StandInOptions Mode(const std::string& mode) {
  StandInOptions options;
  options.mode = mode;
  return options;
}

// A loopback port nobody listens on (bound, read, closed).
int UnusedPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t length = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length);
  close(fd);
  return ntohs(addr.sin_port);
}

class XprofClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FLEETPROF_REQUIRE_PATH(XPROF_PYTHON);
    FLEETPROF_REQUIRE_PATH("/usr/bin/grpc_python_plugin");
    FLEETPROF_REQUIRE_PATH(XPROF_PROTOC);
    FLEETPROF_REQUIRE_PATH(CorpusXSpace());
    static const bool has_grpc = ::fleetprof::testing::PythonHasGrpc();
    FLEETPROF_REQUIRE(has_grpc, XPROF_PYTHON << " able to import grpc and google.protobuf (Debian python3-grpcio)");
    char pattern[] = "/tmp/xprof_client_test_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    work_dir_ = pattern;
    repository_root_ = work_dir_ + "/repository";
  }
  void TearDown() override {
    if (!work_dir_.empty()) fs::remove_all(work_dir_);
  }

  void StartStandIn(StandInOptions options) {
    if (options.xspace_path.empty()) options.xspace_path = CorpusXSpace();
    const absl::Status started = standin_.Start(options, work_dir_);
    ASSERT_TRUE(started.ok()) << started;
  }

  XprofCaptureOptions CaptureOptions(const std::string& session) {
    XprofCaptureOptions options;
    options.address = standin_.address();
    options.duration_ms = 1500;
    options.repository_root = repository_root_;
    options.session_id = session;
    options.host_name = "worker-0:6009";
    return options;
  }

  std::string Recorded(const std::string& key) { return standin_.Recorded(key).value_or("<absent>"); }

  std::string work_dir_;
  std::string repository_root_;
  ProfilerStandIn standin_;
};

TEST_F(XprofClientTest, EmitModeWritesTheReturnedXSpaceByteForByte) {
  StartStandIn(Mode("emit"));
  const absl::StatusOr<std::string> path = CaptureXprof(CaptureOptions("emit_session"));
  ASSERT_TRUE(path.ok()) << path.status() << "\n" << standin_.Log();
  EXPECT_EQ(*path, repository_root_ + "/emit_session/worker-0_6009.xplane.pb");
  EXPECT_EQ(ReadBytes(*path), ReadBytes(CorpusXSpace()));
  EXPECT_FALSE(fs::exists(*path + ".tmp"));
}

// The raw request bytes decoded by a hand-written varint walker with the spec's field numbers
// (ProfileRequest duration_ms=1, opts=4, emit_xspace=9; ProfileOptions start_timestamp_ns=8,
// duration_ms=9, tracer levels 2-4), and the same request parsed by the generated Python code.
TEST_F(XprofClientTest, RequestCarriesSpecFieldNumbersOnTheWire) {
  StartStandIn(Mode("emit"));
  XprofCaptureOptions options = CaptureOptions("wire_session");
  options.duration_ms = 1234;
  options.start_timestamp_ns = 1'700'000'000'123'456'789;
  options.host_tracer_level = 3;
  options.device_tracer_level = 2;
  options.python_tracer_level = 1;
  ASSERT_TRUE(CaptureXprof(options).ok()) << standin_.Log();

  for (const std::string decoder : {"raw", "generated"}) {
    SCOPED_TRACE(decoder);
    const std::string prefix = "request." + decoder + ".";
    EXPECT_EQ(Recorded(prefix + "duration_ms"), "1234");
    EXPECT_EQ(Recorded(prefix + "opts.duration_ms"), "1234");
    EXPECT_EQ(Recorded(prefix + "opts.start_timestamp_ns"), "1700000000123456789");
    EXPECT_EQ(Recorded(prefix + "opts.host_tracer_level"), "3");
    EXPECT_EQ(Recorded(prefix + "opts.device_tracer_level"), "2");
    EXPECT_EQ(Recorded(prefix + "opts.python_tracer_level"), "1");
    EXPECT_EQ(Recorded(prefix + "opts.version"), "1");
    EXPECT_EQ(Recorded(prefix + "emit_xspace"), "true");
    EXPECT_EQ(Recorded(prefix + "tools"), "xplane.pb");
    EXPECT_EQ(Recorded(prefix + "repository_root"), repository_root_);
    EXPECT_EQ(Recorded(prefix + "session_id"), "wire_session");
    EXPECT_EQ(Recorded(prefix + "host_name"), "worker-0:6009");
  }
}

TEST_F(XprofClientTest, UnsetStartTimestampIsNowPlusDelay) {
  StartStandIn(Mode("emit"));
  XprofCaptureOptions options = CaptureOptions("delay_session");
  options.delay_ms = 1500;
  const int64_t before_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                std::chrono::system_clock::now().time_since_epoch()).count();
  ASSERT_TRUE(CaptureXprof(options).ok()) << standin_.Log();
  const int64_t start_ns = std::stoll(Recorded("request.raw.opts.start_timestamp_ns"));
  const int64_t received_ns = std::stoll(Recorded("request.received_unix_ns"));
  EXPECT_GE(start_ns, before_ns + 1'500'000'000);
  EXPECT_LE(start_ns, received_ns + 1'500'000'000);
}

TEST_F(XprofClientTest, FileModePicksUpTheTraceTheServerWrote) {
  StartStandIn(Mode("file"));
  const absl::StatusOr<std::string> path = CaptureXprof(CaptureOptions("file_session"));
  ASSERT_TRUE(path.ok()) << path.status() << "\n" << standin_.Log();
  EXPECT_EQ(*path, repository_root_ + "/file_session/worker-0_6009.xplane.pb");
  EXPECT_EQ(ReadBytes(*path), ReadBytes(CorpusXSpace()));
}

TEST_F(XprofClientTest, FileModeFindsATraceNamedAfterAnotherHost) {
  StandInOptions options = Mode("file");
  options.written_host = "job-pod-7";
  StartStandIn(options);
  const absl::StatusOr<std::string> path = CaptureXprof(CaptureOptions("renamed_session"));
  ASSERT_TRUE(path.ok()) << path.status() << "\n" << standin_.Log();
  EXPECT_EQ(*path, repository_root_ + "/renamed_session/job-pod-7.xplane.pb");
}

TEST_F(XprofClientTest, FileWrittenOutOfReachIsAClearNotFound) {
  StandInOptions options = Mode("file");
  options.write_root = work_dir_ + "/job_private";
  StartStandIn(options);
  const absl::StatusOr<std::string> path = CaptureXprof(CaptureOptions("unshared_session"));
  ASSERT_EQ(path.status().code(), absl::StatusCode::kNotFound) << path.status();
  EXPECT_NE(path.status().message().find("profiler server at " + standin_.address()), std::string::npos)
      << path.status();
}

TEST_F(XprofClientTest, EmptyTraceIsAClearError) {
  StartStandIn(Mode("empty"));
  const absl::StatusOr<std::string> path = CaptureXprof(CaptureOptions("empty_session"));
  ASSERT_EQ(path.status().code(), absl::StatusCode::kFailedPrecondition) << path.status();
  const std::string message(path.status().message());
  EXPECT_NE(message.find("profiler server at " + standin_.address()), std::string::npos) << message;
  EXPECT_NE(message.find("empty_trace"), std::string::npos) << message;
  EXPECT_FALSE(fs::exists(repository_root_ + "/empty_session/worker-0_6009.xplane.pb"));
}

TEST_F(XprofClientTest, BusyServerIsRetriedThenSucceeds) {
  StartStandIn(Mode("busy"));
  const absl::StatusOr<std::string> path = CaptureXprof(CaptureOptions("busy_session"));
  ASSERT_TRUE(path.ok()) << path.status() << "\n" << standin_.Log();
  EXPECT_EQ(Recorded("profile_calls"), "2");
  EXPECT_EQ(ReadBytes(*path), ReadBytes(CorpusXSpace()));
}

TEST_F(XprofClientTest, BusyServerWithoutRetriesReportsBusy) {
  StartStandIn(Mode("busy"));
  XprofCaptureOptions options = CaptureOptions("busy_once_session");
  options.max_attempts = 1;
  const absl::StatusOr<std::string> path = CaptureXprof(options);
  ASSERT_EQ(path.status().code(), absl::StatusCode::kAlreadyExists) << path.status();
  EXPECT_NE(path.status().message().find("busy"), std::string::npos) << path.status();
  EXPECT_EQ(Recorded("profile_calls"), "1");
}

// gRPC's default receive limit is 4 MB; repeated top-level `planes` fields concatenate, so N
// copies of the corpus XSpace are one valid XSpace of N times the size.
TEST_F(XprofClientTest, XSpaceLargerThan64MBArrivesIntact) {
  const std::string corpus = ReadBytes(CorpusXSpace());
  ASSERT_FALSE(corpus.empty());
  const size_t copies = (64u << 20) / corpus.size() + 2;
  const std::string large_path = work_dir_ + "/large.xplane.pb";
  {
    std::ofstream out(large_path, std::ios::binary);
    for (size_t i = 0; i < copies; ++i) out.write(corpus.data(), static_cast<std::streamsize>(corpus.size()));
  }
  ASSERT_GT(fs::file_size(large_path), 64u << 20);
  StandInOptions standin_options = Mode("emit");
  standin_options.xspace_path = large_path;
  StartStandIn(standin_options);
  const absl::StatusOr<std::string> path = CaptureXprof(CaptureOptions("large_session"));
  ASSERT_TRUE(path.ok()) << path.status() << "\n" << standin_.Log();
  EXPECT_EQ(fs::file_size(*path), fs::file_size(large_path));
  EXPECT_TRUE(ReadBytes(*path) == ReadBytes(large_path)) << "received bytes differ";
}

// Issue 21, item 7: on 52e8783 the agent took answers up to INT_MAX bytes (a fake profiler
// server grew it to 2.4 GB). Now a larger answer fails at the limit and leaves no file.
TEST_F(XprofClientTest, ATraceOverTheAgentsLimitFailsAndLeavesNoFile) {
  StartStandIn(Mode("emit"));
  XprofCaptureOptions options = CaptureOptions("capped_session");
  options.max_trace_bytes = 1 << 20;  // the corpus XSpace is 3 MB
  const absl::StatusOr<std::string> path = CaptureXprof(options);
  ASSERT_FALSE(path.ok());
  EXPECT_EQ(path.status().code(), absl::StatusCode::kResourceExhausted) << path.status();
  EXPECT_NE(path.status().message().find("--max_trace_mb"), std::string::npos) << path.status();
  EXPECT_FALSE(fs::exists(repository_root_ + "/capped_session/worker-0_6009.xplane.pb"));
}

// An address a job gave is dialled by the agent itself, inside the job's network namespace,
// and each attempt gets a fresh socket (a channel made from a descriptor never redials).
TEST_F(XprofClientTest, ACaptureThroughAJobNamespaceSocketArrivesIntact) {
  StartStandIn(Mode("busy"));  // the first call fails: the retry needs a second socket
  XprofCaptureOptions options = CaptureOptions("fd_session");
  int dials = 0;
  options.connect = [&]() -> absl::StatusOr<int> {
    ++dials;
    return ConnectInJobNetwork("/proc", ::getpid(), standin_.address(), 5000);
  };
  const absl::StatusOr<std::string> path = CaptureXprof(options);
  ASSERT_TRUE(path.ok()) << path.status() << "\n" << standin_.Log();
  EXPECT_EQ(ReadBytes(*path), ReadBytes(CorpusXSpace()));
  EXPECT_EQ(dials, 2);
}

TEST_F(XprofClientTest, CancelDuringLongCaptureReturnsPromptlyAndTerminatesTheSession) {
  StandInOptions standin_options = Mode("emit");
  standin_options.sleep_ms = -1;  // the capture lasts the requested duration
  StartStandIn(standin_options);
  XprofCaptureOptions options = CaptureOptions("cancel_session");
  options.duration_ms = 60'000;
  const auto start = Clock::now();
  const auto cancelled = [&] { return SecondsSince(start) > 1.0; };
  const absl::StatusOr<std::string> path = CaptureXprof(options, cancelled);
  const double elapsed_s = SecondsSince(start);
  ASSERT_EQ(path.status().code(), absl::StatusCode::kCancelled) << path.status();
  EXPECT_LT(elapsed_s, 4.0);
  EXPECT_EQ(Recorded("profile_calls"), "1");
  EXPECT_EQ(Recorded("terminated"), "cancel_session");
  EXPECT_FALSE(fs::exists(repository_root_ + "/cancel_session/worker-0_6009.xplane.pb"));
}

// No stand-in needed: nothing listens on the port.
TEST(XprofClientUnreachableTest, UnreachableAddressFailsQuicklyAfterBoundedAttempts) {
  XprofCaptureOptions options;
  options.address = "127.0.0.1:" + std::to_string(UnusedPort());
  options.repository_root = "/tmp/xprof_unreachable_unused";
  options.session_id = "unreachable";
  options.max_attempts = 3;
  const auto start = Clock::now();
  const absl::StatusOr<std::string> path = CaptureXprof(options);
  EXPECT_LT(SecondsSince(start), 10.0);
  ASSERT_EQ(path.status().code(), absl::StatusCode::kUnavailable) << path.status();
  const std::string message(path.status().message());
  EXPECT_NE(message.find("profiler server at " + options.address + " unreachable"), std::string::npos)
      << message;
  EXPECT_NE(message.find("3 attempt"), std::string::npos) << message;
}

TEST(XprofClientOptionsTest, RejectsMissingAddressOrRepositoryRoot) {
  XprofCaptureOptions options;
  EXPECT_EQ(CaptureXprof(options).status().code(), absl::StatusCode::kInvalidArgument);
  options.address = "127.0.0.1:1";
  EXPECT_EQ(CaptureXprof(options).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(XprofTraceFileNameTest, ReplacesColonsWithUnderscores) {
  EXPECT_EQ(XprofTraceFileName("10.0.0.5:9999"), "10.0.0.5_9999.xplane.pb");
  EXPECT_EQ(XprofTraceFileName("worker-3"), "worker-3.xplane.pb");
}

}  // namespace
}  // namespace fleetprof
