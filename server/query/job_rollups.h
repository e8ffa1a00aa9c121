#pragma once
// A job's ops view is the sum of its profiles' op and kernel tables. Summed anew at every call,
// a job of 10,000 profiles needs 10,000 summaries, more than the summary cache holds, so every
// dashboard refresh read them all again (6 s on a replica). A rollup (server/query/rollups.h)
// keeps the last answer of each job request with the ids it summed: the next call lists the
// job's profiles and, when every summed id is still listed, adds only the new ones.

#include <string>

#include "compare/job_views.h"
#include "fleetprof/v1/query.pb.h"
#include "server/query/rollups.h"

namespace fleetprof {

class JobRollups : public Rollups<compare::JobOpsSum> {
 public:
  using Rollups::Rollups;

  // The request's identity: job, labels in key order, time bounds.
  static std::string Key(const v1::JobRequest& request);
};

}  // namespace fleetprof
