#include "common/call_bounds.h"

#include <limits>

#include "common/clock.h"

namespace fleetprof {
namespace {
thread_local const CallBounds* current_bounds = nullptr;
}  // namespace

const CallBounds* CurrentCallBounds() { return current_bounds; }

int64_t CallTimeLeftNanos() {
  const CallBounds* bounds = current_bounds;
  if (bounds == nullptr) return std::numeric_limits<int64_t>::max();
  if (bounds->cancelled && bounds->cancelled()) return 0;
  if (bounds->deadline_ns == 0) return std::numeric_limits<int64_t>::max();
  return bounds->deadline_ns - RealClock()->MonotonicNanos();
}

ScopedCallBounds::ScopedCallBounds(const CallBounds* bounds) : outer_(current_bounds) { current_bounds = bounds; }
ScopedCallBounds::~ScopedCallBounds() { current_bounds = outer_; }

}  // namespace fleetprof
