// Waiting for the trace file a job writes as <name>.tmp and renames into place.
#include "collectors/trace_file_waiter.h"

#include <atomic>
#include <cstdio>
#include <fstream>
#include <thread>

#include "gtest/gtest.h"
#include "tests/kineto/script_process.h"

namespace fleetprof {
namespace {

using namespace std::chrono_literals;
using ::fleetprof::testing::TempDir;

int64_t After(std::chrono::nanoseconds wait) { return RealClock()->MonotonicNanos() + wait.count(); }

TEST(TraceFileWaiter, ReturnsOnceTheRenamedFileAppears) {
  TempDir dir;
  const std::string path = dir.path() + "/job_7.pt.trace.json";
  std::thread writer([&] {
    std::this_thread::sleep_for(200ms);
    { std::ofstream(path + ".tmp") << "{\"traceEvents\":[]}"; }
    std::this_thread::sleep_for(200ms);  // the .tmp alone must not count
    std::rename((path + ".tmp").c_str(), path.c_str());
  });
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::string> found = WaitForTraceFile(path, After(10s), *RealClock(), {});
  const auto waited = std::chrono::steady_clock::now() - start;
  writer.join();
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(*found, path);
  EXPECT_GE(waited, 400ms);
  EXPECT_LT(waited, 5s);
}

TEST(TraceFileWaiter, DeadlineNamesTheExpectedPath) {
  TempDir dir;
  const std::string path = dir.path() + "/missing_1.json";
  { std::ofstream(path + ".tmp") << "partial"; }
  absl::StatusOr<std::string> found =
      WaitForTraceFile(path, After(300ms), *RealClock(), {});
  ASSERT_TRUE(absl::IsDeadlineExceeded(found.status())) << found.status();
  EXPECT_EQ(std::string(found.status().message()),
            "job wrote no trace within the deadline (expected " + path + ")");
}

TEST(TraceFileWaiter, StopsWhenCancelled) {
  TempDir dir;
  std::atomic<bool> cancel{false};
  std::thread canceller([&] {
    std::this_thread::sleep_for(200ms);
    cancel = true;
  });
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::string> found = WaitForTraceFile(
      dir.path() + "/never.json", After(60s), *RealClock(), [&] { return cancel.load(); });
  canceller.join();
  EXPECT_TRUE(absl::IsCancelled(found.status())) << found.status();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

TEST(TraceFileWaiter, FolderThatDoesNotExistYetIsFine) {
  TempDir dir;
  const std::string path = dir.path() + "/later/t.json";
  absl::StatusOr<std::string> found =
      WaitForTraceFile(path, After(100ms), *RealClock(), {});
  EXPECT_TRUE(absl::IsDeadlineExceeded(found.status())) << found.status();
}

TEST(TraceFileWaiter, TheDeadlineIsOnTheClockItIsGiven) {
  TempDir dir;
  SimulatedClock clock;
  const int64_t deadline = clock.MonotonicNanos() + int64_t{3600} * 1'000'000'000;  // an hour of its time
  std::thread mover([&] {
    while (clock.waiters() == 0) std::this_thread::sleep_for(1ms);
    clock.Advance(int64_t{3601} * 1'000'000'000);
  });
  absl::StatusOr<std::string> found = WaitForTraceFile(dir.path() + "/never.json", deadline, clock, {});
  mover.join();
  EXPECT_TRUE(absl::IsDeadlineExceeded(found.status())) << found.status();
}

}  // namespace
}  // namespace fleetprof
