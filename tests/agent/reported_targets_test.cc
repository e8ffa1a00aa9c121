// Which Kineto processes an agent reports (agent/reported_targets.h): per-uid caps first, then
// the total shared round-robin, so a uid with a thousand processes hides nobody else's.

#include "agent/reported_targets.h"

#include <set>

#include "gtest/gtest.h"

namespace fleetprof {
namespace {

std::vector<KinetoProcess> Processes(int64_t uid, int32_t first_pid, int count) {
  std::vector<KinetoProcess> out;
  for (int i = 0; i < count; ++i) {
    KinetoProcess p;
    p.uid = uid;
    p.pid = first_pid + i;
    out.push_back(p);
  }
  return out;
}

std::map<int64_t, size_t> CountByUid(const std::vector<KinetoProcess>& processes) {
  std::map<int64_t, size_t> counts;
  for (const KinetoProcess& p : processes) ++counts[p.uid];
  return counts;
}

TEST(ReportedKineto, AUidsFloodIsCappedAndEveryOtherUidStaysReported) {
  std::vector<KinetoProcess> all = Processes(1001, 10'000, 1100);  // the attacker's
  for (int64_t uid : {1000, 1002, 0}) {
    std::vector<KinetoProcess> own = Processes(uid, static_cast<int32_t>(uid * 10 + 1), 3);
    all.insert(all.end(), own.begin(), own.end());
  }
  const ReportedKineto chosen = ChooseReportedKineto(all, 64, 512);
  const auto counts = CountByUid(chosen.reported);
  EXPECT_EQ(counts.at(1001), 64u);
  EXPECT_EQ(counts.at(1000), 3u);
  EXPECT_EQ(counts.at(1002), 3u);
  EXPECT_EQ(counts.at(0), 3u);
  EXPECT_EQ(chosen.left_out, (std::map<int64_t, size_t>{{1001, 1100 - 64}}));
}

TEST(ReportedKineto, TheTotalIsSharedRoundRobinAcrossUids) {
  std::vector<KinetoProcess> all;
  for (int64_t uid = 0; uid < 10; ++uid) {
    std::vector<KinetoProcess> own = Processes(uid, static_cast<int32_t>(1000 * (uid + 1)), 60);
    all.insert(all.end(), own.begin(), own.end());
  }
  const ReportedKineto chosen = ChooseReportedKineto(all, 64, 100);
  ASSERT_EQ(chosen.reported.size(), 100u);
  for (const auto& [uid, count] : CountByUid(chosen.reported)) EXPECT_EQ(count, 10u) << uid;
  size_t left = 0;
  for (const auto& [uid, count] : chosen.left_out) left += count;
  EXPECT_EQ(left, 500u);
  // No process twice, and a uid's own lowest pids first.
  std::set<int32_t> pids;
  for (const KinetoProcess& p : chosen.reported) EXPECT_TRUE(pids.insert(p.pid).second);
  EXPECT_TRUE(pids.contains(1000) && pids.contains(1009) && !pids.contains(1010));
}

TEST(ReportedKineto, UnderTheCapsEverythingIsReported) {
  const ReportedKineto chosen = ChooseReportedKineto(Processes(5, 100, 7), 64, 512);
  EXPECT_EQ(chosen.reported.size(), 7u);
  EXPECT_TRUE(chosen.left_out.empty());
  EXPECT_TRUE(ChooseReportedKineto({}, 64, 512).reported.empty());
  EXPECT_TRUE(ChooseReportedKineto(Processes(5, 100, 7), 64, 0).reported.empty());
}

}  // namespace
}  // namespace fleetprof
