// SamplingPlan (server/fleet/sampling_plan.h): the budget holds in every period, every target
// has the same inclusion probability, a target is never drawn into two captures at once, busy
// targets are skipped and counted, max_concurrent bounds what runs, waiting picks start later.

#include "server/fleet/sampling_plan.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace fleetprof {
namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kStart = int64_t{1'700'000'000} * 1'000'000'000;

v1::SamplingState StateWith(int64_t every_ms, int64_t duration_ms, double max_overhead, int32_t max_concurrent,
                            uint64_t seed = 42) {
  v1::SamplingState state;
  state.mutable_policy()->set_every_ms(every_ms);
  state.mutable_policy()->set_duration_ms(duration_ms);
  state.mutable_policy()->set_max_overhead(max_overhead);
  state.mutable_policy()->set_max_concurrent(max_concurrent);
  state.set_enabled(true);
  state.set_seed(seed);
  return state;
}

// `n` targets on n/5 nodes, 1 to 8 devices each.
std::vector<SampledTarget> Fleet(int n) {
  std::vector<SampledTarget> targets;
  for (int i = 0; i < n; ++i) {
    SampledTarget t;
    t.node = absl::StrCat("node", i / 5);
    t.target = absl::StrCat("kineto:pid=", 1000 + i);
    t.job = absl::StrCat("job", i % 7);
    t.labels = {{"team", i % 2 == 0 ? "a" : "b"}};
    t.devices = 1 + i % 8;
    targets.push_back(t);
  }
  return targets;
}

TEST(SamplingPlan, InclusionProbabilityPutsTheExpectedSpendAtHalfTheBudget) {
  v1::SetSamplingRequest policy;
  policy.set_every_ms(600'000);
  policy.set_duration_ms(30'000);
  policy.set_max_overhead(0.01);
  EXPECT_DOUBLE_EQ(SamplingPlan::InclusionProbability(policy), 0.1);
  policy.set_max_overhead(0.5);  // more than every target every period: capped at 1
  EXPECT_DOUBLE_EQ(SamplingPlan::InclusionProbability(policy), 1.0);
}

TEST(SamplingPlan, CapturedDeviceTimeNeverExceedsTheBudgetInAnyPeriod) {
  // p = 0.2 over 10 targets of 1 to 8 devices: a draw now and then asks for more than the
  // budget (twice its expected spend), and only the budget holds the spend back.
  v1::SamplingState state = StateWith(60'000, 6'000, 0.04, 10'000);
  const std::vector<SampledTarget> targets = Fleet(10);
  const int64_t budget = static_cast<int64_t>(0.04 * static_cast<double>(SamplingPlan::FleetDeviceNs(state.policy(), targets)));
  int64_t started = 0, periods_with_waiting = 0;
  for (int period = 0; period < 500; ++period) {
    SamplingPlan::BeginPeriod(&state, targets, kStart + int64_t{period} * 60'000 * kMs);
    int64_t spent = 0;
    for (const auto& pick : SamplingPlan::Dispatch(&state, targets, 0).start) {
      spent += SamplingPlan::CostDeviceNs(state.policy(), pick.devices());
      ++started;
    }
    EXPECT_LE(spent, budget) << "period " << period;
    EXPECT_EQ(state.spend().rbegin()->captured_device_ns(), spent);
    if (!state.pending().empty()) ++periods_with_waiting;
    EXPECT_LT(state.pending_size(), 30) << "the queue stays short at half the budget";
  }
  EXPECT_GT(periods_with_waiting, 0) << "the test never reached the budget";
  EXPECT_EQ(state.captures(), started);
}

TEST(SamplingPlan, EveryTargetIsDrawnWithTheSameProbability) {
  v1::SamplingState state = StateWith(600'000, 30'000, 0.01, 10'000);  // p = 0.1
  const std::vector<SampledTarget> targets = Fleet(100);
  std::map<std::string, int> drawn;
  const int periods = 4000;
  for (int period = 0; period < periods; ++period) {
    state.clear_pending();
    SamplingPlan::BeginPeriod(&state, targets, kStart + int64_t{period} * 600'000 * kMs);
    for (const auto& pick : state.pending()) {
      ++drawn[pick.target()];
      EXPECT_DOUBLE_EQ(pick.inclusion_probability(), 0.1);
      EXPECT_EQ(pick.weight_device_ns(), static_cast<int64_t>(pick.devices()) * 600'000 * kMs * 10);
    }
  }
  ASSERT_EQ(drawn.size(), targets.size());
  // Binomial(4000, 0.1): mean 400, sd 19; 6 sd either side, whatever the target's devices.
  for (const auto& [target, n] : drawn) {
    EXPECT_NEAR(n, 400, 114) << target;
  }
}

TEST(SamplingPlan, ATargetIsNeverInTwoCapturesAtOnce) {
  // p = 1 and two periods drawn before a dispatch: every target has two picks waiting, and the
  // budget (2.5 captures of the whole fleet) would start both.
  v1::SamplingState state = StateWith(10'000, 2'000, 0.5, 10'000);
  const std::vector<SampledTarget> targets = Fleet(20);
  SamplingPlan::BeginPeriod(&state, targets, kStart);
  SamplingPlan::BeginPeriod(&state, targets, kStart + 10'000 * kMs);
  ASSERT_EQ(state.pending_size(), 40);
  std::set<std::string> started;
  for (const auto& pick : SamplingPlan::Dispatch(&state, targets, 0).start) {
    EXPECT_TRUE(started.insert(pick.node() + "/" + pick.target()).second) << pick.target();
  }
  EXPECT_EQ(started.size(), 20u);
  EXPECT_EQ(state.pending_size(), 20);  // the second picks wait for their targets
}

TEST(SamplingPlan, BusyTargetsAreSkippedAndCounted) {
  v1::SamplingState state = StateWith(600'000, 2'000, 0.5, 10'000);  // p = 1
  std::vector<SampledTarget> targets = Fleet(10);
  targets[3].busy = true;
  targets[7].busy = true;
  SamplingPlan::BeginPeriod(&state, targets, kStart);
  PlanStep step = SamplingPlan::Dispatch(&state, targets, 0);
  EXPECT_EQ(step.skipped_busy, 2);
  EXPECT_EQ(state.skipped_busy(), 2);
  EXPECT_EQ(step.start.size(), 8u);
  for (const auto& pick : step.start) {
    EXPECT_NE(pick.target(), targets[3].target);
    EXPECT_NE(pick.target(), targets[7].target);
  }
  EXPECT_TRUE(state.pending().empty());
}

TEST(SamplingPlan, MaxConcurrentBoundsWhatRunsAndTheRestWaits) {
  v1::SamplingState state = StateWith(600'000, 2'000, 0.5, 3);  // p = 1
  const std::vector<SampledTarget> targets = Fleet(10);
  SamplingPlan::BeginPeriod(&state, targets, kStart);
  EXPECT_EQ(SamplingPlan::Dispatch(&state, targets, 1).start.size(), 2u);  // one already runs
  EXPECT_EQ(state.pending_size(), 8);
  EXPECT_TRUE(SamplingPlan::Dispatch(&state, targets, 3).start.empty());
  EXPECT_EQ(SamplingPlan::Dispatch(&state, targets, 0).start.size(), 3u);
  EXPECT_EQ(state.pending_size(), 5);
  EXPECT_EQ(state.captures(), 5);
}

TEST(SamplingPlan, APickOverTheBudgetWaitsForTheNextPeriodAndIsChargedThere) {
  // Two targets of 4 devices, p = 1, a budget of 40 device-s a period of which triggered
  // captures (ReserveTriggered) took 36: one 4 device-s capture fits.
  v1::SamplingState state = StateWith(10'000, 1'000, 0.5, 100);
  std::vector<SampledTarget> targets = Fleet(2);
  targets[0].devices = targets[1].devices = 4;
  SamplingPlan::BeginPeriod(&state, targets, kStart);
  ASSERT_EQ(state.pending_size(), 2);
  state.mutable_spend(0)->set_captured_device_ns(36'000 * kMs);
  ASSERT_EQ(SamplingPlan::Dispatch(&state, targets, 0).start.size(), 1u);
  EXPECT_EQ(state.spend(0).captured_device_ns(), 40'000 * kMs);
  ASSERT_EQ(state.pending_size(), 1);
  const std::string waiting = state.pending(0).target();
  EXPECT_EQ(state.pending(0).drawn_period_start_ns(), kStart);
  SamplingPlan::BeginPeriod(&state, targets, kStart + 10'000 * kMs);
  PlanStep step = SamplingPlan::Dispatch(&state, targets, 0);
  ASSERT_EQ(step.start.size(), 2u);  // the waiting pick and the other target's new one
  EXPECT_EQ(step.start[0].target(), waiting);  // the oldest first
  EXPECT_EQ(step.start[0].drawn_period_start_ns(), kStart);
  EXPECT_EQ(state.spend().rbegin()->captured_device_ns(), 2 * 4'000 * kMs);  // charged here
  EXPECT_EQ(state.pending_size(), 1);  // the waiting target's own new pick
}

TEST(SamplingPlan, OnlyTargetsOfJobsWhoseLabelsMatchAreDrawn) {
  v1::SamplingState state = StateWith(600'000, 2'000, 0.5, 100);
  (*state.mutable_policy()->mutable_labels())["team"] = "a";
  const std::vector<SampledTarget> targets = Fleet(10);
  SamplingPlan::BeginPeriod(&state, targets, kStart);
  EXPECT_EQ(state.pending_size(), 5);
  for (const auto& pick : state.pending()) {
    EXPECT_EQ((pick.target().back() - '0') % 2, 0) << pick.target();
  }
  int64_t devices = 0;
  for (const auto& t : targets) devices += t.labels.at("team") == "a" ? t.devices : 0;
  EXPECT_EQ(state.spend(0).fleet_device_ns(), devices * 600'000 * kMs);
}

TEST(SamplingPlan, GoneTargetsAreDropped) {
  v1::SamplingState state = StateWith(600'000, 2'000, 0.5, 100);
  std::vector<SampledTarget> targets = Fleet(4);
  SamplingPlan::BeginPeriod(&state, targets, kStart);
  targets.pop_back();
  PlanStep step = SamplingPlan::Dispatch(&state, targets, 0);
  EXPECT_EQ(step.dropped, 1);
  EXPECT_EQ(step.start.size(), 3u);
}

TEST(SamplingPlan, TheSameSeedAndFleetDrawTheSamePicks) {
  const std::vector<SampledTarget> targets = Fleet(300);
  std::vector<SampledTarget> shuffled(targets.rbegin(), targets.rend());
  v1::SamplingState a = StateWith(600'000, 30'000, 0.01, 100, 7), b = a;
  SamplingPlan::BeginPeriod(&a, targets, kStart);
  SamplingPlan::BeginPeriod(&b, shuffled, kStart);
  EXPECT_EQ(a.SerializeAsString(), b.SerializeAsString());
  EXPECT_NE(a.seed(), 7u);  // moved on
}

TEST(SamplingPlan, OverheadLastHourCountsThePeriodsOfTheLastHour) {
  v1::SamplingState state;
  for (int i = 0; i < 3; ++i) {
    auto* s = state.add_spend();
    s->set_period_start_ns(kStart + i * int64_t{1800} * 1'000'000'000);
    s->set_captured_device_ns(i == 0 ? 1000 : 10);
    s->set_fleet_device_ns(1000);
  }
  // Just past the third period's start the first began more than an hour ago: out.
  EXPECT_DOUBLE_EQ(SamplingPlan::OverheadLastHour(state, kStart + int64_t{3600} * 1'000'000'000 + 1), 0.01);
}

}  // namespace
}  // namespace fleetprof
