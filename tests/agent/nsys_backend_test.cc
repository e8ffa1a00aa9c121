// The nsys capture backend (agent/nsys_backend.h) through the capture runner, with the stand-in
// nsys (tests/agent/nsys_standin.py, not Nsight Systems) run for real by RunCommand: a job
// under an nsys session is captured as its own user (start, stop, export), the SQLite export is
// uploaded and nothing is left on the node; without --nsys, and for a name that is not safe,
// the capture fails with the reason.

#include <grp.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <vector>

#include "agent/capture_runner.h"
#include "collectors/command_runner.h"
#include "collectors/process_jobs.h"
#include "common/safe_paths.h"
#include "gtest/gtest.h"
#include "tests/agent/nsys_standin.h"
#include "tests/test_support.h"

namespace fleetprof {
namespace {

namespace fs = std::filesystem;
using ::fleetprof::testing::InstallNsysStandin;
using ::fleetprof::testing::NsysStandin;

constexpr char kExport[] = "nsys/saxpy_a100.sqlite.gz";

class Updates {
 public:
  void Add(const v1::AgentMessage& message) {
    std::lock_guard lock(mu_);
    all_.push_back(message.capture_update());
    changed_.notify_all();
  }
  v1::CaptureUpdate Final() {
    std::unique_lock lock(mu_);
    changed_.wait_for(lock, std::chrono::seconds(60), [&] {
      return !all_.empty() &&
             (all_.back().state() == v1::CaptureTarget::INDEXED || all_.back().state() == v1::CaptureTarget::FAILED);
    });
    return all_.empty() ? v1::CaptureUpdate() : all_.back();
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  std::vector<v1::CaptureUpdate> all_;
};

// A process that sleeps as `uid` (setresuid, as a job of that user runs) with `env`.
class SleepingJob {
 public:
  SleepingJob(std::vector<std::string> env, int64_t uid) {
    std::vector<char*> c_env;
    for (std::string& e : env) c_env.push_back(e.data());
    c_env.push_back(nullptr);
    char sleep_path[] = "/bin/sleep";
    char seconds[] = "120";
    char* argv[] = {sleep_path, seconds, nullptr};
    pid_ = ::fork();
    if (pid_ == 0) {
      if (uid >= 0 && (::setgroups(0, nullptr) != 0 || ::setresgid(uid, uid, uid) != 0 || ::setresuid(uid, uid, uid) != 0)) {
        _exit(126);
      }
      ::execve(argv[0], argv, c_env.data());
      _exit(127);
    }
    // Its start time once it is the sleep (the exec done: the environ is the job's).
    for (int i = 0; i < 200 && ReadProcFile("/proc/" + std::to_string(pid_) + "/cmdline").value_or("").rfind(
                                   "/bin/sleep", 0) != 0;
         ++i) {
      ::usleep(10'000);
    }
    start_ticks_ = ReadProcessStartTicks("/proc", pid_).value_or(0);
  }
  ~SleepingJob() {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  pid_t pid() const { return pid_; }
  uint64_t start_ticks() const { return start_ticks_; }

 private:
  pid_t pid_ = -1;
  uint64_t start_ticks_ = 0;
};

class NsysBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FLEETPROF_REQUIRE_PATH("/usr/bin/python3");
    FLEETPROF_REQUIRE_PATH(testing::CorpusPath(kExport));
    dir_ = (fs::path(::testing::TempDir()) / "nsys-").lexically_normal().string() + "backend-" + std::to_string(::getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    standin_ = InstallNsysStandin(dir_ + "/nsys", testing::CorpusPath(kExport));
    drop_ = dir_ + "/drop";
    ASSERT_TRUE(EnsureSharedDropFolder(drop_).ok());
    // What the stand-in hands out, gunzipped: the bytes the upload must carry.
    absl::StatusOr<CommandOutcome> gunzip = RunCommand(
        {.argv = {"/bin/sh", "-c", "gzip -dc " + testing::CorpusPath(kExport) + " > " + dir_ + "/expected.sqlite"}});
    ASSERT_TRUE(gunzip.ok() && gunzip->ok());
    expected_ = testing::ReadSmallFile(dir_ + "/expected.sqlite");
  }
  void TearDown() override { fs::remove_all(dir_); }

  CaptureRunner::Options Options() const {
    CaptureRunner::Options options;
    options.node = "n1";
    options.xprof_dir = dir_;
    options.kineto_dir = drop_;
    return options;
  }
  static v1::CaptureCommand CommandFor(const SleepingJob& job, const std::string& session) {
    v1::CaptureCommand command;
    command.set_capture_id("cap-nsys");
    command.set_target_name("nsys:session=" + session);
    command.mutable_target()->set_kind(v1::Target::nsys);
    command.mutable_target()->set_job("train");
    command.mutable_target()->set_pid(job.pid());
    command.mutable_target()->set_start_ticks(job.start_ticks());
    command.mutable_target()->set_address(session);
    command.set_duration_ms(200);
    command.set_start_time_unix_ns(RealClock()->Now());
    command.set_deadline_unix_ns(RealClock()->Now() + int64_t{60} * 1'000'000'000);
    return command;
  }
  // Runs one capture of `job` with `deps`; the final update, and the uploads' bytes.
  v1::CaptureUpdate Capture(const SleepingJob& job, const std::string& session, const CaptureBackendDeps& deps) {
    Updates updates;
    Uploader upload = [&](const UploadOptions& options) -> absl::StatusOr<v1::UploadResponse> {
      std::ifstream in(options.path, std::ios::binary);
      uploaded_.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      file_names_.push_back(options.file_name);
      v1::UploadResponse response;
      response.set_profile_id("p-nsys");
      return response;
    };
    CaptureRunner runner(Options(), upload, deps, [&](const v1::AgentMessage& m) { updates.Add(m); });
    runner.Run(CommandFor(job, session));
    return updates.Final();
  }
  // Files left in the jobs' private folders.
  std::vector<std::string> LeftInDrop() const {
    std::vector<std::string> left;
    for (const auto& entry : fs::recursive_directory_iterator(drop_)) {
      if (!entry.is_directory()) left.push_back(entry.path().string());
    }
    return left;
  }

  std::string dir_;
  std::string drop_;
  NsysStandin standin_;
  std::string expected_;
  std::vector<std::string> uploaded_;
  std::vector<std::string> file_names_;
};

TEST_F(NsysBackendTest, ASessionIsStartedStoppedExportedAndUploadedAsTheJobsUser) {
  FLEETPROF_REQUIRE(::geteuid() == 0, "root, to run the job and nsys as uid 65534");
  SleepingJob job({"FLEETPROF_JOB=train", "FLEETPROF_NSYS_SESSION=sess-1"}, 65534);
  ::setenv("FLEETPROF_AGENT_ONLY", "secret", 1);
  const v1::CaptureUpdate final =
      Capture(job, "sess-1", {.nsys = standin_.program, .run_command = RunCommand});
  ASSERT_EQ(final.state(), v1::CaptureTarget::INDEXED) << final.error() << "\n" << standin_.Log();
  ASSERT_EQ(uploaded_.size(), 1u);
  EXPECT_TRUE(uploaded_[0] == expected_) << "the upload is the export, byte for byte (" << uploaded_[0].size()
                                         << " bytes, want " << expected_.size() << ")";
  EXPECT_TRUE(file_names_[0].starts_with("cap-nsys-") && file_names_[0].ends_with(".sqlite")) << file_names_[0];
  EXPECT_EQ(LeftInDrop(), std::vector<std::string>{}) << "report and export removed";

  // Three calls, in order, each as the job's user with no other group, in its private folder.
  const std::string log = standin_.Log();
  const size_t start = log.find(R"("argv": ["start", "--session=sess-1", "--output=)" + drop_ + "/uid65534-");
  const size_t stop = log.find(R"("argv": ["stop", "--session=sess-1"])");
  const size_t exported = log.find(R"("argv": ["export", "--type", "sqlite", "--output", ")" + drop_ + "/uid65534-");
  ASSERT_NE(start, std::string::npos) << log;
  ASSERT_NE(stop, std::string::npos) << log;
  ASSERT_NE(exported, std::string::npos) << log;
  EXPECT_LT(start, stop);
  EXPECT_LT(stop, exported);
  size_t lines = 0;
  for (size_t at = log.find(R"("uid": 65534, "gid": 65534, "groups": [], "cwd": ")" + drop_ + "/uid65534-");
       at != std::string::npos; at = log.find(R"("uid": 65534, "gid": 65534, "groups": [])", at + 1)) {
    ++lines;
  }
  EXPECT_EQ(lines, 3u) << log;
  // Nothing of the agent's environment (the stand-in's /bin/sh adds PWD).
  EXPECT_NE(log.find(R"("env": ["HOME", "LC_ALL", "PATH")"), std::string::npos) << log;
  EXPECT_EQ(log.find("FLEETPROF_AGENT_ONLY"), std::string::npos) << log;
}

TEST_F(NsysBackendTest, WithoutNsysTheCaptureFailsSayingToPassIt) {
  SleepingJob job({"FLEETPROF_JOB=train", "FLEETPROF_NSYS_SESSION=sess-1"}, -1);
  const v1::CaptureUpdate final = Capture(job, "sess-1", CaptureBackendDeps{});
  ASSERT_EQ(final.state(), v1::CaptureTarget::FAILED);
  EXPECT_NE(final.error().find("--nsys=PATH"), std::string::npos) << final.error();
  EXPECT_NE(final.error().find("install Nsight Systems"), std::string::npos) << final.error();
  EXPECT_TRUE(uploaded_.empty());
}

TEST_F(NsysBackendTest, AnUnsafeSessionNameIsRefusedBeforeNsysRuns) {
  SleepingJob job({"FLEETPROF_JOB=train"}, -1);
  const v1::CaptureUpdate final =
      Capture(job, "--output=/etc/x", {.nsys = standin_.program, .run_command = RunCommand});
  ASSERT_EQ(final.state(), v1::CaptureTarget::FAILED);
  EXPECT_NE(final.error().find("refusing nsys session"), std::string::npos) << final.error();
  EXPECT_EQ(standin_.Log(), "");
}

TEST_F(NsysBackendTest, ASessionNsysDoesNotKnowFailsWithNsysOwnWords) {
  SleepingJob job({"FLEETPROF_JOB=train"}, -1);  // no session in its environment: the stand-in knows none
  const v1::CaptureUpdate final = Capture(job, "sess-9", {.nsys = standin_.program, .run_command = RunCommand});
  ASSERT_EQ(final.state(), v1::CaptureTarget::FAILED);
  EXPECT_NE(final.error().find("nsys start --session=sess-9"), std::string::npos) << final.error();
  EXPECT_NE(final.error().find("session 'sess-9' does not exist"), std::string::npos) << final.error();
  EXPECT_EQ(LeftInDrop(), std::vector<std::string>{});
}

TEST_F(NsysBackendTest, AnExportPastMaxTraceBytesIsRefusedAndRemoved) {
  const NsysStandin big = InstallNsysStandin(dir_ + "/big", testing::CorpusPath(kExport), "--export-fill 8388608");
  SleepingJob job({"FLEETPROF_JOB=train", "FLEETPROF_NSYS_SESSION=sess-2"}, -1);
  Updates updates;
  CaptureRunner::Options options = Options();
  options.max_trace_bytes = 4 << 20;
  CaptureRunner runner(options, nullptr, {.nsys = big.program, .run_command = RunCommand},
                       [&](const v1::AgentMessage& m) { updates.Add(m); });
  runner.Run(CommandFor(job, "sess-2"));
  const v1::CaptureUpdate final = updates.Final();
  ASSERT_EQ(final.state(), v1::CaptureTarget::FAILED);
  // A program killed by SIGXFSZ says "size limit"; Python (the stand-in) ignores the signal and
  // its write fails with EFBIG instead.
  EXPECT_TRUE(final.error().find("size limit") != std::string::npos ||
              final.error().find("File too large") != std::string::npos)
      << final.error();
  EXPECT_EQ(LeftInDrop(), std::vector<std::string>{});
}

}  // namespace
}  // namespace fleetprof
