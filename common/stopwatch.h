#pragma once
// How long real work took, for latency histograms and logs of where the time went. It reads
// the machine's monotonic clock (RealClock()), never a simulated one: a test's simulated time
// does not make the work itself faster or slower. Whatever decides something by time (ages,
// deadlines, retries, expiry) reads the Clock it was given instead (common/clock.h).

#include <cstdint>

#include "common/clock.h"

namespace fleetprof {

class Stopwatch {
 public:
  // Starts now.
  Stopwatch() : started_ns_(RealClock()->MonotonicNanos()) {}

  // Since it started.
  int64_t ElapsedNanos() const { return RealClock()->MonotonicNanos() - started_ns_; }
  int64_t ElapsedMillis() const { return ElapsedNanos() / 1'000'000; }
  double ElapsedSeconds() const { return static_cast<double>(ElapsedNanos()) / 1e9; }
  // From `earlier`'s start to this one's (a phase between two marks).
  double SecondsSince(const Stopwatch& earlier) const {
    return static_cast<double>(started_ns_ - earlier.started_ns_) / 1e9;
  }

 private:
  int64_t started_ns_;
};

}  // namespace fleetprof
