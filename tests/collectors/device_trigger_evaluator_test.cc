// The agent's device trigger evaluator (collectors/device_trigger_evaluator.h) on a simulated
// clock: a value past the bound for the window fires once, with the value and window in words;
// the cooldown holds the next; a sample back within the bound starts the window afresh; only
// the trigger's job's devices count.

#include "collectors/device_trigger_evaluator.h"

#include "common/clock.h"
#include "gtest/gtest.h"

namespace fleetprof {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

v1::DeviceTriggers UtilizationBelow(double percent, int64_t for_ms, int64_t cooldown_ms,
                                    const std::string& job = "train") {
  v1::DeviceTriggers set;
  v1::DeviceTrigger* t = set.add_triggers();
  t->set_trigger_id("g1");
  t->set_job(job);
  t->mutable_condition()->set_metric(v1::DeviceCondition::DEVICE_UTILIZATION);
  t->mutable_condition()->set_below(true);
  t->mutable_condition()->set_percent(percent);
  t->mutable_condition()->set_for_ms(for_ms);
  t->set_cooldown_ms(cooldown_ms);
  return set;
}

// Device 0 runs job "train" at `utilization`; device 1 runs "other" at 1%.
NvmlSnapshot Round(double utilization, uint64_t used_mib = 10240, uint64_t total_mib = 81920) {
  NvmlSnapshot round;
  round.up = true;
  DeviceSample d0;
  d0.index = 0;
  d0.utilization_ratio = utilization;
  d0.memory_used_bytes = used_mib << 20;
  d0.memory_total_bytes = total_mib << 20;
  d0.job_memory_used_bytes["train"] = 6144ull << 20;
  DeviceSample d1;
  d1.index = 1;
  d1.utilization_ratio = 0.01;
  d1.job_memory_used_bytes["other"] = 1ull << 20;
  round.devices = {d0, d1};
  return round;
}

TEST(DeviceTriggerEvaluatorTest, UtilizationUnderThirtyPercentForFiveSecondsFiresOnceWithEvidence) {
  SimulatedClock clock;
  DeviceTriggerEvaluator evaluator;
  evaluator.SetTriggers(UtilizationBelow(30, 5000, 60'000));
  EXPECT_TRUE(evaluator.Observe(Round(0.87), clock.MonotonicNanos()).empty());
  const int64_t drop = clock.MonotonicNanos() + kSecond;
  std::vector<v1::TriggerFiring> all;
  for (int64_t t = drop; t <= drop + 10 * kSecond; t += 200'000'000) {
    clock.Set(t);
    for (auto& f : evaluator.Observe(Round(0.10), clock.MonotonicNanos())) {
      EXPECT_GE(t - drop, 5 * kSecond);  // never before the window has passed
      all.push_back(f);
    }
  }
  ASSERT_EQ(all.size(), 1u);  // the cooldown (60 s) holds the rest
  EXPECT_EQ(all[0].trigger_id(), "g1");
  EXPECT_EQ(all[0].job(), "train");
  EXPECT_EQ(all[0].device(), "0");
  EXPECT_EQ(all[0].devices(), 1);
  EXPECT_EQ(all[0].window_ms(), 5000);
  EXPECT_DOUBLE_EQ(all[0].value(), 10);
  EXPECT_EQ(all[0].evidence(), "device 0 utilization 10% < 30% for 5.0 s");
}

TEST(DeviceTriggerEvaluatorTest, ARoundWithinTheBoundStartsTheWindowAfresh) {
  SimulatedClock clock;
  DeviceTriggerEvaluator evaluator;
  evaluator.SetTriggers(UtilizationBelow(30, 5000, 60'000));
  int64_t t = clock.MonotonicNanos();
  for (int i = 0; i < 4; ++i, t += kSecond) EXPECT_TRUE(evaluator.Observe(Round(0.1), t).empty());
  EXPECT_TRUE(evaluator.Observe(Round(0.5), t).empty());  // 4 s past, then back: nothing yet
  t += kSecond;
  for (int i = 0; i < 5; ++i, t += kSecond) EXPECT_TRUE(evaluator.Observe(Round(0.1), t).empty()) << i;
  EXPECT_EQ(evaluator.Observe(Round(0.1), t).size(), 1u);  // 5 s since the value dropped again
}

TEST(DeviceTriggerEvaluatorTest, TheCooldownHoldsTheNextFiringThenItFiresAgain) {
  DeviceTriggerEvaluator evaluator;
  evaluator.SetTriggers(UtilizationBelow(30, 1000, 3000));
  std::vector<int64_t> at;
  for (int64_t t = 0; t <= 10 * kSecond; t += 100'000'000) {
    if (!evaluator.Observe(Round(0.1), t).empty()) at.push_back(t);
  }
  // At 1 s (the window), then each time the 3 s cooldown and the 1 s margin end: 5 s, 9 s.
  EXPECT_EQ(at, (std::vector<int64_t>{1 * kSecond, 5 * kSecond, 9 * kSecond}));
}

TEST(DeviceTriggerEvaluatorTest, OnlyTheJobsDevicesCount) {
  DeviceTriggerEvaluator evaluator;
  // Device 1 sits at 1% but runs "other": a trigger of "train" never fires on it.
  evaluator.SetTriggers(UtilizationBelow(30, 1000, 3000));
  for (int64_t t = 0; t <= 5 * kSecond; t += kSecond) EXPECT_TRUE(evaluator.Observe(Round(0.9), t).empty());
  // A trigger of a job with no device here never fires.
  evaluator.SetTriggers(UtilizationBelow(30, 1000, 3000, "absent"));
  for (int64_t t = 0; t <= 5 * kSecond; t += kSecond) EXPECT_TRUE(evaluator.Observe(Round(0.0), t).empty());
}

TEST(DeviceTriggerEvaluatorTest, MemoryAboveTheBoundFiresWithThePercentOfTheDevice) {
  v1::DeviceTriggers set = UtilizationBelow(0, 2000, 60'000);
  set.mutable_triggers(0)->mutable_condition()->set_metric(v1::DeviceCondition::DEVICE_MEMORY);
  set.mutable_triggers(0)->mutable_condition()->set_below(false);
  set.mutable_triggers(0)->mutable_condition()->set_percent(90);
  DeviceTriggerEvaluator evaluator;
  evaluator.SetTriggers(set);
  EXPECT_TRUE(evaluator.Observe(Round(0.5, 80000), 0).empty());
  auto firings = evaluator.Observe(Round(0.5, 80000), 2 * kSecond);
  ASSERT_EQ(firings.size(), 1u);
  EXPECT_EQ(firings[0].evidence(), "device 0 memory 97.66% > 90% for 2.0 s");
}

TEST(DeviceTriggerEvaluatorTest, AKeptTriggerKeepsItsWindowAndAChangedOneStartsAfresh) {
  DeviceTriggerEvaluator evaluator;
  evaluator.SetTriggers(UtilizationBelow(30, 5000, 60'000));
  EXPECT_TRUE(evaluator.Observe(Round(0.1), 0).empty());
  evaluator.SetTriggers(UtilizationBelow(30, 5000, 60'000));  // the same set again (a reconnect)
  EXPECT_EQ(evaluator.Observe(Round(0.1), 5 * kSecond).size(), 1u);
  evaluator.SetTriggers(UtilizationBelow(40, 5000, 60'000));  // changed: a new trigger's state
  EXPECT_TRUE(evaluator.Observe(Round(0.1), 6 * kSecond).empty());
  EXPECT_EQ(evaluator.Observe(Round(0.1), 11 * kSecond).size(), 1u);
  evaluator.SetTriggers(v1::DeviceTriggers());
  EXPECT_EQ(evaluator.size(), 0u);
}

TEST(DeviceTriggerEvaluatorTest, AnUnknownValueIsNeverPastTheBound) {
  DeviceTriggerEvaluator evaluator;
  evaluator.SetTriggers(UtilizationBelow(30, 1000, 3000));
  NvmlSnapshot round = Round(0.1);
  round.devices[0].utilization_ratio.reset();
  for (int64_t t = 0; t <= 5 * kSecond; t += kSecond) EXPECT_TRUE(evaluator.Observe(round, t).empty());
}

}  // namespace
}  // namespace fleetprof
