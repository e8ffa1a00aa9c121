#pragma once
// Clock offsets between the ranks of a job from their collectives (docs/using.md, Job
// timeline): the instances of one collective end nearly together on every rank of its
// communicator, so the difference of their ends is the difference of the ranks' clocks.
//
// Instances are matched by (stream with collectives, operation) and sequence: the k-th
// all_reduce on a rank's first collective stream is the k-th on every rank's. A rank whose
// trace starts a few collectives earlier or later is matched at the shift whose end
// differences agree best (smallest median absolute deviation); shift 0 is kept unless
// another agrees at least four times better, so evenly spaced collectives stay at 0.

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "jobtrace/collectives.h"

namespace fleetprof::jobtrace {

// How far (in instances) a rank's sequence may be shifted against the reference's.
inline constexpr int kMaxSequenceShift = 8;

// The matching key of a collective: its stream with collectives and its operation.
inline uint32_t CollectiveKey(const Collective& c) { return (c.stream << 8) | static_cast<uint32_t>(c.op); }

struct RankAlignment {
  // The rank's time + offset_ns = the reference's time. 0 for the reference itself.
  int64_t offset_ns = 0;
  // The median absolute deviation of the end differences, at least either clock's grain.
  int64_t uncertainty_ns = 0;
  int64_t matched = 0;   // instances whose ends were compared
  bool aligned = false;  // false: no collective in common with the reference (offset 0)
  // Per key: this rank's instance index = the reference's index + shift.
  absl::flat_hash_map<uint32_t, int> shifts;
};

// ranks[0] is the reference (the lowest rank). One answer per rank, in the same order.
std::vector<RankAlignment> AlignByCollectives(const std::vector<const ProfileCollectives*>& ranks);

// The spans of `events` (sorted by key, then start) per key: key -> [begin, end).
absl::flat_hash_map<uint32_t, std::pair<size_t, size_t>> SpansByKey(const std::vector<Collective>& events);

}  // namespace fleetprof::jobtrace
