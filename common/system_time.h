#pragma once
// gRPC's deadlines are std::chrono::system_clock time points; fleetprof's time is a Clock's
// unix nanoseconds (common/clock.h). These convert one to the other, so a deadline is set from
// the Clock a component was given and a caller's deadline is read against one.

#include <chrono>
#include <cstdint>

#include "common/clock.h"

namespace fleetprof {

// Unix nanoseconds as a system_clock time point.
inline std::chrono::system_clock::time_point SystemTimeOf(int64_t unix_ns) {
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::nanoseconds(unix_ns)));
}

// `after` from `clock`'s now: a deadline for grpc::ClientContext::set_deadline and the like.
inline std::chrono::system_clock::time_point DeadlineAfter(const Clock& clock, std::chrono::nanoseconds after) {
  return SystemTimeOf(clock.Now()) + std::chrono::duration_cast<std::chrono::system_clock::duration>(after);
}

// Nanoseconds from `clock`'s now until `deadline`; negative once it passed. REQUIRES: `deadline`
// is a real one (not time_point::max(), gRPC's "none").
inline int64_t NanosUntil(const Clock& clock, std::chrono::system_clock::time_point deadline) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - SystemTimeOf(clock.Now())).count();
}

}  // namespace fleetprof
