#include "common/clock.h"

#include <algorithm>
#include <chrono>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace fleetprof {
namespace {

class WallClock final : public Clock {
 public:
  int64_t Now() const override { return absl::GetCurrentTimeNanos(); }
  int64_t MonotonicNanos() const override {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  bool WaitUntil(absl::Mutex* mu, const absl::Condition& done, int64_t deadline_ns) const override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    for (;;) {
      const int64_t left = deadline_ns - MonotonicNanos();
      if (left <= 0) return done.Eval();
      if (mu->AwaitWithTimeout(done, absl::Nanoseconds(left))) return true;
    }
  }
};

}  // namespace

Clock* RealClock() {
  static WallClock* clock = new WallClock();
  return clock;
}

void SleepUntil(const Clock& clock, int64_t deadline_ns) {
  absl::Mutex mu;
  static constexpr bool kNever = false;
  absl::MutexLock lock(&mu);
  clock.WaitUntil(&mu, absl::Condition(&kNever), deadline_ns);
}

bool SimulatedClock::WaitUntil(absl::Mutex* mu, const absl::Condition& done, int64_t deadline_ns) const {
  waiters_.fetch_add(1);
  while (!done.Eval() && MonotonicNanos() < deadline_ns) {
    mu->AwaitWithTimeout(done, absl::Milliseconds(1));
  }
  waiters_.fetch_sub(1);
  return done.Eval();
}

}  // namespace fleetprof
