// Programs the agent runs for a job (collectors/command_runner.h), as real processes: only the
// environment given, the exit status and output, the time limit over the whole process group,
// the output and file size caps, another user with no supplementary groups, and the errors
// that name the program.

#include "collectors/command_runner.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/ascii.h"
#include "collectors/nsys_cli.h"
#include "gtest/gtest.h"
#include "tests/test_support.h"

namespace fleetprof {
namespace {

namespace fs = std::filesystem;

class CommandRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/fleetprof-run-XXXXXX";
    dir_ = ::mkdtemp(pattern);
    ::chmod(dir_.c_str(), 0755);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
};

TEST_F(CommandRunnerTest, TheProgramGetsOnlyTheGivenEnvironmentAndItsExitIsReported) {
  absl::StatusOr<CommandOutcome> env = RunCommand({.argv = {"/usr/bin/env"}, .env = {"A=1", "B=two"}});
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_TRUE(env->ok());
  EXPECT_EQ(env->output, "A=1\nB=two\n");

  absl::StatusOr<CommandOutcome> failed = RunCommand({.argv = {"/bin/sh", "-c", "echo to stderr >&2; exit 3"}});
  ASSERT_TRUE(failed.ok());
  EXPECT_FALSE(failed->ok());
  EXPECT_EQ(failed->exit_code, 3);
  EXPECT_EQ(failed->Describe(), "exit status 3: to stderr");
}

TEST_F(CommandRunnerTest, ItRunsInTheGivenFolderWithNothingOnStdin) {
  absl::StatusOr<CommandOutcome> out =
      RunCommand({.argv = {"/bin/sh", "-c", "pwd; cat; echo end"}, .cwd = dir_});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->output, dir_ + "\nend\n");
}

TEST_F(CommandRunnerTest, TheTimeLimitKillsTheWholeProcessGroup) {
  const std::string pid_file = dir_ + "/grandchild.pid";
  const auto started = std::chrono::steady_clock::now();
  absl::StatusOr<CommandOutcome> out = RunCommand(
      {.argv = {"/bin/sh", "-c", "sleep 60 & echo $! > " + pid_file + "; sleep 60"}, .timeout_ms = 300});
  ASSERT_TRUE(out.ok());
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10));
  EXPECT_TRUE(out->timed_out);
  EXPECT_FALSE(out->ok());
  EXPECT_EQ(out->Describe(), "killed at its time limit");
  std::ifstream in(pid_file);
  pid_t grandchild = 0;
  in >> grandchild;
  ASSERT_GT(grandchild, 0);
  // Gone, or a zombie waiting for a reaper: never still sleeping.
  bool dead = false;
  for (int i = 0; i < 100 && !dead; ++i) {
    std::ifstream stat("/proc/" + std::to_string(grandchild) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), {});
    dead = text.empty() || text.find(") Z ") != std::string::npos;
    if (!dead) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(dead) << "the program's own child outlived the limit";
}

TEST_F(CommandRunnerTest, CancellationStopsIt) {
  std::atomic<bool> stop{false};
  std::thread later([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    stop = true;
  });
  absl::StatusOr<CommandOutcome> out =
      RunCommand({.argv = {"/bin/sleep", "60"}, .cancelled = [&] { return stop.load(); }});
  later.join();
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->cancelled);
  EXPECT_FALSE(out->timed_out);
}

TEST_F(CommandRunnerTest, OnlyTheFirstBytesOfItsOutputAreKept) {
  absl::StatusOr<CommandOutcome> out =
      RunCommand({.argv = {"/bin/sh", "-c", "head -c 1000000 /dev/zero | tr '\\0' x"}, .max_output_bytes = 1000});
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->ok()) << "read to the end, not blocked on a full pipe";
  EXPECT_EQ(out->output, std::string(1000, 'x'));
}

TEST_F(CommandRunnerTest, AFileWrittenPastTheSizeLimitEndsIt) {
  absl::StatusOr<CommandOutcome> out = RunCommand(
      {.argv = {"/bin/sh", "-c", "exec head -c 1000000 /dev/zero > " + dir_ + "/big"}, .max_file_bytes = 65536});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->signal, SIGXFSZ);
  EXPECT_NE(out->Describe().find("size limit"), std::string::npos) << out->Describe();
  EXPECT_LE(fs::file_size(dir_ + "/big"), 65536u);
}

TEST_F(CommandRunnerTest, ItRunsAsTheGivenUserWithNoOtherGroup) {
  FLEETPROF_REQUIRE(::geteuid() == 0, "root, to run a program as uid 65534");
  // A folder only root may enter: entered before the uid changes, so its own files are reached.
  const std::string private_dir = dir_ + "/root-only";
  fs::create_directories(private_dir);
  ::chmod(private_dir.c_str(), 0700);
  absl::StatusOr<CommandOutcome> out = RunCommand(
      {.argv = {"/bin/sh", "-c", "id -u; id -g; id -G; cat /etc/shadow > /dev/null 2>&1 || echo denied"},
       .uid = 65534,
       .gid = 65534,
       .cwd = private_dir});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->output, "65534\n65534\n65534\ndenied\n");
}

TEST_F(CommandRunnerTest, AProgramThatCannotRunIsAnErrorNamingIt) {
  absl::StatusOr<CommandOutcome> missing = RunCommand({.argv = {dir_ + "/no-nsys"}});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find(dir_ + "/no-nsys"), std::string::npos) << missing.status();
  EXPECT_NE(missing.status().message().find("No such file"), std::string::npos) << missing.status();
  EXPECT_FALSE(RunCommand({.argv = {"nsys"}}).ok()) << "a program by name would be looked up in a PATH";
  EXPECT_FALSE(RunCommand({.argv = {"/bin/true"}, .cwd = dir_ + "/gone"}).ok());
}

TEST_F(CommandRunnerTest, TheNodesNsysMustBeAProgramOnlyRootMayChange) {
  const std::string nsys = dir_ + "/nsys";
  std::ofstream(nsys) << "#!/bin/sh\n";
  ::chmod(nsys.c_str(), 0755);
  EXPECT_TRUE(CheckNsysProgram(nsys).ok()) << CheckNsysProgram(nsys);
  EXPECT_FALSE(CheckNsysProgram("nsys").ok()) << "relative";
  EXPECT_FALSE(CheckNsysProgram(dir_ + "/none").ok());
  ::chmod(nsys.c_str(), 0644);
  EXPECT_FALSE(CheckNsysProgram(nsys).ok()) << "not executable";
  ::chmod(nsys.c_str(), 0775);
  EXPECT_NE(CheckNsysProgram(nsys).message().find("not group/other-writable"), std::string::npos);
}

}  // namespace
}  // namespace fleetprof
