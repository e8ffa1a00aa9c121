// The two helpers that keep time reads in common/: gRPC's system_clock deadlines from a Clock's
// time (common/system_time.h), and the Stopwatch that times real work (common/stopwatch.h).

#include <chrono>
#include <thread>

#include "common/clock.h"
#include "common/stopwatch.h"
#include "common/system_time.h"
#include "gtest/gtest.h"

namespace fleetprof {
namespace {

TEST(SystemTime, ADeadlineIsTheClocksNowPlusTheWaitAndReadsBackOnIt) {
  SimulatedClock clock;
  const auto deadline = DeadlineAfter(clock, std::chrono::seconds(5));
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::nanoseconds>(deadline.time_since_epoch()).count(),
            clock.Now() + 5'000'000'000);
  EXPECT_EQ(NanosUntil(clock, deadline), 5'000'000'000);
  clock.Advance(7'000'000'000);
  EXPECT_EQ(NanosUntil(clock, deadline), -2'000'000'000) << "negative once it passed";
  EXPECT_EQ(SystemTimeOf(0), std::chrono::system_clock::time_point());
}

TEST(Stopwatch, TimesRealWorkWhateverTheSimulatedClockDoes) {
  const Stopwatch first;
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const Stopwatch second;
  EXPECT_GE(first.ElapsedMillis(), 20);
  EXPECT_GE(second.SecondsSince(first), 0.02);
  EXPECT_GE(first.ElapsedSeconds(), second.ElapsedSeconds());
}

}  // namespace
}  // namespace fleetprof
