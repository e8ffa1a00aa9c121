#pragma once
// The one seam between fleetprof's background work and time (LevelDB's Env::NowMicros in
// spirit). Components read the time and wait through a Clock; the daemons pass RealClock(),
// tests a SimulatedClock they run forward, so a schedule's missed-run rule or a capture's
// deadline is checked in microseconds of test time instead of seconds of sleep.

#include <cstdint>
#include <atomic>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace fleetprof {

class Clock {
 public:
  virtual ~Clock() = default;

  // Wall time, unix nanoseconds.
  virtual int64_t Now() const = 0;
  // Nanoseconds that only go forward (for timeouts: a wall clock set back must not stretch
  // them); their zero means nothing.
  virtual int64_t MonotonicNanos() const = 0;

  // Waits, holding `mu` except while blocked, until `done` holds or MonotonicNanos() reaches
  // `deadline_ns` (a monotonic deadline: a wall clock set back does not stretch the wait).
  // True when `done` held. `done` is evaluated under `mu`, and re-evaluated
  // whenever `mu` is released by another thread (absl::Mutex::Await), so whoever changes what
  // `done` reads must do so under `mu`.
  // REQUIRES: `mu` held.
  virtual bool WaitUntil(absl::Mutex* mu, const absl::Condition& done, int64_t deadline_ns) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) = 0;
};

// The system's wall clock, and the steady clock for waits.
Clock* RealClock();

// Sleeps on `clock` until its MonotonicNanos() reaches `deadline_ns` (a poll's pause).
void SleepUntil(const Clock& clock, int64_t deadline_ns);

// A clock that moves only when told. A wait in WaitUntil() ends once Advance() or Set() has
// reached its deadline: waiters look at the simulated time every millisecond of real time,
// which needs no registry of waiters (and so no lock order between them and the clock).
class SimulatedClock final : public Clock {
 public:
  explicit SimulatedClock(int64_t start_ns = int64_t{1'700'000'000} * 1'000'000'000) : now_(start_ns) {}

  int64_t Now() const override { return now_.load(); }
  int64_t MonotonicNanos() const override { return now_.load(); }
  bool WaitUntil(absl::Mutex* mu, const absl::Condition& done, int64_t deadline_ns) const override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);

  void Advance(int64_t ns) { now_.fetch_add(ns); }
  void Set(int64_t now_ns) { now_.store(now_ns); }
  // How many threads wait in WaitUntil() now (a test waits for its loop to be idle).
  int waiters() const { return waiters_.load(); }

 private:
  std::atomic<int64_t> now_;
  mutable std::atomic<int> waiters_{0};
};

}  // namespace fleetprof
