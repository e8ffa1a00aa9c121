#pragma once
// Collective instances across the ranks of a job on one clock: each rank's start and end, how
// long each waited for the last to arrive, who arrived last; per rank the totals and its
// communication time that no compute covered (docs/using.md, Job timeline).

#include <string>
#include <vector>

#include "fleetprof/v1/query.pb.h"
#include "jobtrace/clock_alignment.h"
#include "jobtrace/collectives.h"

namespace fleetprof::jobtrace {

inline constexpr int kDefaultListedCollectives = 1000;
inline constexpr int kMaxListedCollectives = 100000;

struct RankClock {
  std::string profile_id;
  std::string rank;
  const ProfileCollectives* collectives = nullptr;
  int64_t offset_ns = 0;       // whatever source chose it
  int64_t uncertainty_ns = 0;
};

// ranks[0] is the reference; `alignment` (AlignByCollectives of the same ranks) says which
// instances match. Lists the first `limit` instances by the reference's start and counts
// every one in the totals. Only instances seen on two ranks or more count.
void AnalyzeCollectives(const std::vector<RankClock>& ranks, const std::vector<RankAlignment>& alignment, int limit,
                        v1::JobCollectivesResponse* out);

}  // namespace fleetprof::jobtrace
