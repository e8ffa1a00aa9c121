#pragma once
// Level of detail of the event store, in the manner of XProf's streaming trace viewer: an
// event lives at the level of its duration, so a zoomed-out window reads only the long
// events and the per-block counts of the short ones.

#include <bit>
#include <cstdint>

namespace fleetprof::timeline {

inline constexpr uint32_t kLevels = 32;

// Level of a duration in ns: 0 for [0, 4), else floor(log4(dur)), [4^k, 4^(k+1)).
inline uint32_t LevelOfDuration(int64_t dur_ns) {
  if (dur_ns < 4) return 0;
  return static_cast<uint32_t>((63 - std::countl_zero(static_cast<uint64_t>(dur_ns))) / 2);
}

// The shortest ns duration a level holds.
inline int64_t LevelMinDuration(uint32_t level) { return level == 0 ? 0 : int64_t{1} << (2 * level); }

}  // namespace fleetprof::timeline
