#include "collectors/process_jobs.h"

#include <string>

#include "gtest/gtest.h"
#include "tests/collectors/metrics_test_support.h"

namespace fleetprof {
namespace {

using ::fleetprof::testing::FakeProcTree;

std::string Environ(std::initializer_list<const char*> entries) {
  std::string block;
  for (const char* entry : entries) block.append(entry).push_back('\0');
  return block;
}

TEST(FindJobInEnvironTest, FindsJobAmongNulSeparatedVariables) {
  EXPECT_EQ(FindJobInEnviron(Environ({"PATH=/bin", "FLEETPROF_JOB=train", "HOME=/"})), "train");
  EXPECT_EQ(FindJobInEnviron(std::string("A=1\0FLEETPROF_JOB=last", 22)), "last");
  EXPECT_EQ(FindJobInEnviron(Environ({"FLEETPROF_JOB=a=b c"})), "a=b c");
}

TEST(FindJobInEnvironTest, IgnoresLookalikesAndEmptyValues) {
  EXPECT_EQ(FindJobInEnviron(Environ({"FLEETPROF_JOBS=x", "MY_FLEETPROF_JOB=y"})), std::nullopt);
  EXPECT_EQ(FindJobInEnviron(Environ({"FLEETPROF_JOB="})), std::nullopt);
  EXPECT_EQ(FindJobInEnviron(""), std::nullopt);
}

TEST(ReadProcessJobTest, ReadsEnvironUnderProcRoot) {
  FakeProcTree proc;
  proc.Write("42/environ", Environ({"FLEETPROF_JOB=serve"}));
  proc.Write("43/environ", Environ({"PATH=/bin"}));
  EXPECT_EQ(ReadProcessJob(proc.root(), 42), "serve");
  EXPECT_EQ(ReadProcessJob(proc.root(), 43), std::nullopt);
  EXPECT_EQ(ReadProcessJob(proc.root(), 44), std::nullopt) << "exited process";
}

// Issue 39, finding 6: environments are read as root for every process on the node, and
// their owners size them. At most kMaxEnvironBytes, in whole entries.
TEST(ReadProcessEnvironTest, ReadsWholeEntriesWithinTheBound) {
  FakeProcTree proc;
  const std::string exact = Environ({"FLEETPROF_JOB=a", ("PAD=" + std::string(kMaxEnvironBytes - 21, 'x')).c_str()});
  ASSERT_EQ(exact.size(), kMaxEnvironBytes);
  proc.Write("42/environ", exact);
  EXPECT_EQ(*ReadProcessEnviron(proc.root(), 42), exact) << "a block that fits is read whole";
  const std::string head = Environ({"FLEETPROF_JOB=a", ("PAD=" + std::string(kMaxEnvironBytes - 30, 'x')).c_str()});
  proc.Write("43/environ", head + Environ({"FLEETPROF_JOB_TAIL=cut by the bound"}) + std::string(1 << 20, 'y'));
  EXPECT_EQ(*ReadProcessEnviron(proc.root(), 43), head) << "the entry the bound cuts is dropped";
  EXPECT_EQ(ReadProcessJob(proc.root(), 43), "a");
}

TEST(ReadProcFileTest, ReportsMissingFileAsNotFound) {
  FakeProcTree proc;
  EXPECT_EQ(ReadProcFile(proc.root() + "/1/stat").status().code(), absl::StatusCode::kNotFound);
}

TEST(ReadProcFileTest, ReadsRealProcfsFilesThatReportSizeZero) {
  absl::StatusOr<std::string> stat = ReadProcFile("/proc/self/stat");
  ASSERT_TRUE(stat.ok()) << stat.status();
  EXPECT_FALSE(stat->empty());
}

TEST(ProcessJobCacheTest, ReadsEnvironOncePerProcessAndAgainForRecycledPid) {
  FakeProcTree proc;
  proc.Write("42/environ", Environ({"FLEETPROF_JOB=train"}));
  ProcessJobCache cache(proc.root());
  EXPECT_EQ(cache.JobOf(42, 1000, "python"), "train");
  // Cached: a changed environ file is not re-read for the same process...
  proc.Write("42/environ", Environ({"FLEETPROF_JOB=other"}));
  EXPECT_EQ(cache.JobOf(42, 1000, "python"), "train");
  // ...but a new start time (pid reuse) or command name (exec) is a new process.
  EXPECT_EQ(cache.JobOf(42, 2000, "python"), "other");
  proc.Write("42/environ", Environ({"FLEETPROF_JOB=third"}));
  EXPECT_EQ(cache.JobOf(42, 2000, "torchrun"), "third");
}

TEST(ProcessJobCacheTest, SweepForgetsProcessesNotSeenSinceLastSweep) {
  FakeProcTree proc;
  ProcessJobCache cache(proc.root());
  cache.JobOf(1, 1, "a");
  cache.JobOf(2, 1, "b");
  cache.Sweep();
  cache.JobOf(1, 1, "a");
  cache.Sweep();
  EXPECT_EQ(cache.size(), 1u);
}

}  // namespace
}  // namespace fleetprof
