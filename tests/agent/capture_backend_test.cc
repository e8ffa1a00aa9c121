// Capture backends (agent/capture_backend.h): a profiler added in a test with one file pair
// (replay_backend.{h,cc}) and one table row runs through the runner like the daemon's own —
// RUNNING with its note, UPLOADING, uploaded with the capture's labels, INDEXED, and its file
// removed — while a kind no row names fails with the reason.

#include <unistd.h>

#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <vector>

#include "agent/capture_runner.h"
#include "gtest/gtest.h"
#include "tests/agent/replay_backend.h"
#include "tests/test_support.h"

namespace fleetprof {
namespace {

using ::fleetprof::testing::kReplayKind;
using ::fleetprof::testing::ReplayBackend;

class Updates {
 public:
  void Add(const v1::AgentMessage& message) {
    std::lock_guard lock(mu_);
    all_.push_back(message.capture_update());
    changed_.notify_all();
  }
  // Every update, once one says `state`.
  std::vector<v1::CaptureUpdate> Until(v1::CaptureTarget::State state) {
    std::unique_lock lock(mu_);
    changed_.wait_for(lock, std::chrono::seconds(30), [&] { return !all_.empty() && all_.back().state() == state; });
    return all_;
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  std::vector<v1::CaptureUpdate> all_;
};

v1::CaptureCommand CommandFor(v1::Target::Kind kind, const std::string& address) {
  v1::CaptureCommand command;
  command.set_capture_id("cap-replay");
  command.set_target_name("replayed");
  command.mutable_target()->set_kind(kind);
  command.mutable_target()->set_job("train");
  command.mutable_target()->set_address(address);
  command.set_deadline_unix_ns(RealClock()->Now() + int64_t{60} * 1'000'000'000);
  return command;
}

CaptureRunner::Options OptionsIn(const std::string& dir) {
  CaptureRunner::Options options;
  options.node = "n1";
  options.xprof_dir = dir;
  options.kineto_dir = dir;
  return options;
}

TEST(CaptureBackendTest, ABackendAddedWithOneRowIsCapturedUploadedAndCleanedUp) {
  const std::string dir = ::testing::TempDir() + "/replay-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const std::string recorded = dir + "/recorded.pt.trace.json";
  { std::ofstream(recorded) << R"({"traceEvents":[]})"; }

  std::vector<CaptureBackendRow> table(DefaultCaptureBackends().begin(), DefaultCaptureBackends().end());
  table.push_back({kReplayKind, "replay", &ReplayBackend::Make});  // the one row

  std::vector<UploadOptions> uploads;
  std::string uploaded_bytes;
  Uploader upload = [&](const UploadOptions& options) -> absl::StatusOr<v1::UploadResponse> {
    uploads.push_back(options);
    std::ifstream in(options.path);
    uploaded_bytes.assign(std::istreambuf_iterator<char>(in), {});
    v1::UploadResponse response;
    response.set_profile_id("p-replayed");
    return response;
  };
  Updates updates;
  {
    CaptureRunner runner(OptionsIn(dir), upload, CaptureBackendDeps{}, [&](const v1::AgentMessage& m) { updates.Add(m); },
                         table);
    runner.Run(CommandFor(kReplayKind, recorded));
    const std::vector<v1::CaptureUpdate> seen = updates.Until(v1::CaptureTarget::INDEXED);
    ASSERT_FALSE(seen.empty());
    EXPECT_EQ(seen.back().profile_id(), "p-replayed");
    std::vector<std::string> notes;
    for (const v1::CaptureUpdate& u : seen) notes.push_back(u.note());
    EXPECT_NE(std::find(notes.begin(), notes.end(), "replayed"), notes.end()) << "the backend's progress note";
  }
  ASSERT_EQ(uploads.size(), 1u);
  EXPECT_EQ(uploaded_bytes, R"({"traceEvents":[]})");
  EXPECT_EQ(uploads[0].job, "train");
  EXPECT_EQ(uploads[0].labels.at("capture_id"), "cap-replay");
  EXPECT_EQ(uploads[0].labels.at("source"), "capture");
  EXPECT_FALSE(std::filesystem::exists(dir + "/cap-replay-recorded.pt.trace.json")) << "removed once indexed";
  EXPECT_TRUE(std::filesystem::exists(recorded));
  std::filesystem::remove_all(dir);
}

TEST(CaptureBackendTest, AKindNoRowNamesFailsWithTheReason) {
  Updates updates;
  CaptureRunner runner(OptionsIn(::testing::TempDir()), nullptr, CaptureBackendDeps{},
                       [&](const v1::AgentMessage& m) { updates.Add(m); });
  runner.Run(CommandFor(kReplayKind, "/nonexistent"));
  const std::vector<v1::CaptureUpdate> seen = updates.Until(v1::CaptureTarget::FAILED);
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back().error(), "this agent cannot capture targets of kind 100");
}

TEST(CaptureBackendTest, TheDaemonsTableHasOneRowPerKind) {
  std::set<int> kinds;
  for (const CaptureBackendRow& row : DefaultCaptureBackends()) {
    EXPECT_TRUE(kinds.insert(row.kind).second) << row.name;
    EXPECT_TRUE(v1::Target::Kind_IsValid(row.kind)) << row.name;
  }
  EXPECT_TRUE(kinds.contains(v1::Target::xprof));
  EXPECT_TRUE(kinds.contains(v1::Target::kineto));
  EXPECT_TRUE(kinds.contains(v1::Target::nsys));
}

}  // namespace
}  // namespace fleetprof
