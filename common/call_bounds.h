#pragma once
// The bounds of the call a thread works for: when its caller stops waiting (the gRPC deadline)
// and whether it has gone (cancelled). The transport edge sets them around an operation
// (ScopedCallBounds); slow I/O deep below (an object-store request and its retries) reads
// them, so it gives up with its caller instead of holding a query worker long after the
// client left. Work with no call around it (uploads, retention) has no bounds.

#include <cstdint>
#include <functional>

namespace fleetprof {

struct CallBounds {
  int64_t deadline_ns = 0;            // on RealClock()->MonotonicNanos(); 0: none
  std::function<bool()> cancelled;    // null: never
};

// The bounds of the call this thread runs now, or null outside any.
const CallBounds* CurrentCallBounds();

// Monotonic nanoseconds left before the current call's deadline: INT64_MAX without one, at
// most 0 once it passed or the caller went away.
int64_t CallTimeLeftNanos();

// Sets this thread's bounds while alive (nested scopes restore the outer ones).
class ScopedCallBounds {
 public:
  explicit ScopedCallBounds(const CallBounds* bounds);
  ~ScopedCallBounds();
  ScopedCallBounds(const ScopedCallBounds&) = delete;
  ScopedCallBounds& operator=(const ScopedCallBounds&) = delete;

 private:
  const CallBounds* outer_;
};

}  // namespace fleetprof
