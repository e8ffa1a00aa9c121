// The job rules of the table in rules.cc.
#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "compare/job_views.h"
#include "diagnosis/rule_support.h"

namespace fleetprof::diagnosis {
namespace {

constexpr int64_t kMinLateRankInstances = 5;
constexpr int kMaxLateRankEvidence = 10;

}  // namespace

void StragglerRank(const JobFacts& facts, const Rule& rule, double threshold, std::vector<v1::Finding>* out) {
  const std::vector<v1::JobProfilePoint>& points = facts.points;
  // The latest profile of each rank that has steps.
  std::map<std::string, const v1::JobProfilePoint*> latest;
  for (const v1::JobProfilePoint& p : points) {
    if (p.median_step_ns() <= 0) continue;
    const std::string rank = p.rank().empty() ? absl::StrCat("node ", p.node()) : absl::StrCat("rank ", p.rank());
    const v1::JobProfilePoint*& slot = latest[rank];
    if (slot == nullptr || p.ingested_at_ns() > slot->ingested_at_ns()) slot = &p;
  }
  if (latest.size() < 2) return;
  // Each rank against the median of the *other* ranks: with itself in the median, a rank 35%
  // slower than the only other one was compared with 1.175 and never reached 1.2.
  const std::string* slowest = nullptr;
  double ratio = 0;
  int64_t median = 0;  // of the others, for the slowest
  for (const auto& [rank, p] : latest) {
    std::vector<v1::JobProfilePoint> others;
    for (const auto& [other, q] : latest) {
      if (other != rank) others.push_back(*q);
    }
    const int64_t others_median = compare::MedianStepNs(others);
    if (others_median <= 0) continue;
    const double r = static_cast<double>(p->median_step_ns()) / static_cast<double>(others_median);
    if (slowest == nullptr || r > ratio) slowest = &rank, ratio = r, median = others_median;
  }
  if (slowest == nullptr) return;
  if (ratio < threshold) return;
  const v1::JobProfilePoint& p = *latest.at(*slowest);
  v1::Finding f = NewFinding(rule, ratio, threshold,
                             absl::StrCat(*slowest, " steps in ", HumanNs(p.median_step_ns()), ", ",
                                          absl::StrFormat("%.2f", ratio), "x the median of the other ranks (", HumanNs(median), ")"),
                             "Every collective waits for the slowest rank: compare its profile with a median "
                             "one (fleetprof diff), and check its node (thermal throttling, a noisy neighbour, "
                             "a slower link, uneven data).");
  v1::Evidence* e = f.add_evidence();
  e->set_track(absl::StrCat("profile:", p.profile_id()));
  e->set_profile_id(p.profile_id());
  e->set_start_ns(p.start_ns());
  e->set_end_ns(p.end_ns());
  e->set_note(p.rank().empty() ? *slowest : absl::StrCat(*slowest, " on node ", p.node()));
  out->push_back(std::move(f));
}

void LateRank(const JobFacts& facts, const Rule& rule, double threshold, std::vector<v1::Finding>* out) {
  if (facts.collectives == nullptr) return;
  const v1::JobCollectivesResponse& c = *facts.collectives;
  if (c.instances() < kMinLateRankInstances) return;
  const v1::CollectiveRankTotals* late = nullptr;
  for (const v1::CollectiveRankTotals& r : c.ranks()) {
    if (late == nullptr || r.last_count() > late->last_count()) late = &r;
  }
  if (late == nullptr || late->last_count() == 0) return;
  const double share = static_cast<double>(late->last_count()) / static_cast<double>(c.instances());
  if (share < threshold) return;
  int64_t offset = 0;
  for (const v1::JobTraceProfile& p : c.profiles()) {
    if (p.profile_id() == late->profile_id()) offset = p.clock_offset_ns();
  }
  v1::Finding f = NewFinding(
      rule, share, threshold,
      absl::StrCat("rank ", late->rank(), " arrives last at ", late->last_count(), " of ", c.instances(),
                   " collectives (", Percent(share), "); the other ranks wait for it"),
      "The others idle in their collectives until this rank joins: compare what it does before them "
      "(fleetprof job-trace around an instance), and check its node and its share of the data.");
  int evidence = 0;
  for (const v1::CollectiveInstance& instance : c.collectives()) {
    if (instance.last_rank() != late->rank() || evidence >= kMaxLateRankEvidence) continue;
    for (const v1::CollectiveRankTiming& t : instance.ranks()) {
      if (t.profile_id() != late->profile_id()) continue;
      v1::Evidence* e = f.add_evidence();
      e->set_track(absl::StrCat("profile:", t.profile_id()));
      e->set_profile_id(t.profile_id());
      e->set_start_ns(t.start_ns() - offset);  // its own clock, where its viewer opens
      e->set_end_ns(t.end_ns() - offset);
      int64_t longest_wait = 0;
      for (const v1::CollectiveRankTiming& other : instance.ranks()) longest_wait = std::max(longest_wait, other.wait_ns());
      e->set_note(absl::StrCat(instance.op(), " #", instance.seq(), ": another rank waited ", HumanNs(longest_wait)));
      ++evidence;
    }
  }
  out->push_back(std::move(f));
}

}  // namespace fleetprof::diagnosis
