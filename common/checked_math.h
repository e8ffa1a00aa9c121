#pragma once
// Arithmetic on values that come from traces and clients: sums saturate at the int64 range
// instead of overflowing (undefined behaviour), so a hostile total stays a large number.

#include <cstdint>
#include <limits>

namespace fleetprof {

inline int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t out;
  if (!__builtin_add_overflow(a, b, &out)) return out;
  return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}

inline int64_t SaturatingSub(int64_t a, int64_t b) {
  int64_t out;
  if (!__builtin_sub_overflow(a, b, &out)) return out;
  return b < 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}

}  // namespace fleetprof
