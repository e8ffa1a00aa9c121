#include "agent/reported_targets.h"

#include <algorithm>

namespace fleetprof {

ReportedKineto ChooseReportedKineto(std::vector<KinetoProcess> processes, size_t per_uid, size_t total) {
  std::map<int64_t, std::vector<KinetoProcess>> by_uid;
  for (KinetoProcess& p : processes) by_uid[p.uid].push_back(std::move(p));
  ReportedKineto out;
  for (auto& [uid, list] : by_uid) {
    std::sort(list.begin(), list.end(), [](const KinetoProcess& a, const KinetoProcess& b) { return a.pid < b.pid; });
    if (list.size() > per_uid) {
      out.left_out[uid] += list.size() - per_uid;
      list.resize(per_uid);
    }
  }
  // Round-robin: the i-th process of every uid before the (i+1)-th of any.
  std::map<int64_t, size_t> taken;
  for (size_t round = 0; out.reported.size() < total; ++round) {
    bool any = false;
    for (auto& [uid, list] : by_uid) {
      if (round >= list.size()) continue;
      any = true;
      if (out.reported.size() >= total) break;
      out.reported.push_back(list[round]);
      ++taken[uid];
    }
    if (!any) break;
  }
  for (const auto& [uid, list] : by_uid) {
    if (taken[uid] < list.size()) out.left_out[uid] += list.size() - taken[uid];
  }
  std::sort(out.reported.begin(), out.reported.end(), [](const KinetoProcess& a, const KinetoProcess& b) {
    return a.uid != b.uid ? a.uid < b.uid : a.pid < b.pid;
  });
  return out;
}

}  // namespace fleetprof
