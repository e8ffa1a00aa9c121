#pragma once
// Which of the node's Kineto processes the agent reports to the server. Any local user can
// start processes that poll the Kineto socket; the server refuses an agent whose hello or
// heartbeat lists more targets (or bytes) than its limits, so one user's thousand processes
// would cut the whole node off. Each uid's processes are capped first, then the total is
// filled round-robin across uids: one uid's count never evicts or hides another uid's.

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "collectors/kineto_endpoint.h"

namespace fleetprof {

struct ReportedKineto {
  std::vector<KinetoProcess> reported;  // by uid, then pid
  std::map<int64_t, size_t> left_out;   // by uid: processes not reported
};

// At most `per_uid` processes of each uid (its lowest pids: the longest-lived as a rule), and
// at most `total` in all, uids taking turns.
ReportedKineto ChooseReportedKineto(std::vector<KinetoProcess> processes, size_t per_uid, size_t total);

}  // namespace fleetprof
