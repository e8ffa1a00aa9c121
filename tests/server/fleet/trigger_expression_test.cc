// The trigger condition grammar (server/fleet/trigger_expression.h): the four forms, percent
// bounds, durations, and errors that show the grammar or the known rules.

#include "server/fleet/trigger_expression.h"

#include "gtest/gtest.h"

namespace fleetprof {
namespace {

const std::vector<std::string> kRules = {"idle_device", "late_rank", "straggler_rank"};

TEST(TriggerExpressionTest, UtilizationBelowForFiveSecondsParses) {
  auto c = ParseTriggerCondition("device_utilization < 30% for 5s", kRules);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->device.metric(), v1::DeviceCondition::DEVICE_UTILIZATION);
  EXPECT_TRUE(c->device.below());
  EXPECT_DOUBLE_EQ(c->device.percent(), 30);
  EXPECT_EQ(c->device.for_ms(), 5000);
  EXPECT_TRUE(c->rule.empty());
  EXPECT_FALSE(c->regression);
}

TEST(TriggerExpressionTest, MemoryAboveWithoutSpacesAndDecimalsParses) {
  auto c = ParseTriggerCondition("device_memory>92.5%for 1.5s", kRules);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->device.metric(), v1::DeviceCondition::DEVICE_MEMORY);
  EXPECT_FALSE(c->device.below());
  EXPECT_DOUBLE_EQ(c->device.percent(), 92.5);
  EXPECT_EQ(c->device.for_ms(), 1500);
}

TEST(TriggerExpressionTest, EveryDurationUnitReadsInMilliseconds) {
  EXPECT_EQ(*ParseTriggerDurationMs("500ms"), 500);
  EXPECT_EQ(*ParseTriggerDurationMs("5s"), 5000);
  EXPECT_EQ(*ParseTriggerDurationMs("2m"), 120'000);
  EXPECT_EQ(*ParseTriggerDurationMs("1h"), 3'600'000);
  EXPECT_EQ(*ParseTriggerDurationMs("7d"), 7 * 86'400'000LL);
  for (const char* bad : {"", "5", "s", "5 sec", "-5s", "0s", "5x", "1e3s", "..s"}) {
    EXPECT_FALSE(ParseTriggerDurationMs(bad).ok()) << bad;
  }
}

TEST(TriggerExpressionTest, RuleAndRegressionParse) {
  auto rule = ParseTriggerCondition("rule late_rank", kRules);
  ASSERT_TRUE(rule.ok()) << rule.status();
  EXPECT_EQ(rule->rule, "late_rank");
  EXPECT_EQ(rule->device.metric(), v1::DeviceCondition::METRIC_UNSPECIFIED);
  auto regression = ParseTriggerCondition("  regression ", kRules);
  ASSERT_TRUE(regression.ok()) << regression.status();
  EXPECT_TRUE(regression->regression);
}

TEST(TriggerExpressionTest, UnknownRuleIsRefusedListingTheKnownRules) {
  auto c = ParseTriggerCondition("rule late_ranks", kRules);
  ASSERT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("unknown rule 'late_ranks'"), std::string::npos) << c.status();
  EXPECT_NE(c.status().message().find("idle_device, late_rank, straggler_rank"), std::string::npos) << c.status();
}

TEST(TriggerExpressionTest, BadExpressionsAreInvalidArgumentsShowingTheGrammar) {
  for (const char* bad :
       {"", "device_utilization", "device_utilization 30% for 5s", "device_utilization < 130% for 5s",
        "device_utilization < -1% for 5s", "device_utilization < 30%", "device_utilization < 30% 5s",
        "device_utilization < 30% for", "device_utilization < 30% for 5 s", "device_utilization < 30% for 5s and more",
        "device_utilization < x% for 5s", "device_temperature > 80% for 5s", "regression now", "rule", "rule a b",
        "device_memory > 50% for 25h", "device_utilization < nan% for 5s"}) {
    auto c = ParseTriggerCondition(bad, kRules);
    ASSERT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    const std::string message(c.status().message());
    if (std::string_view(bad).substr(0, 4) == "rule" && std::string_view(bad).size() > 4) continue;
    EXPECT_NE(message.find("`device_utilization < N% for D`"), std::string::npos) << bad << ": " << message;
    EXPECT_NE(message.find("`rule NAME`"), std::string::npos) << message;
  }
}

TEST(TriggerExpressionTest, BoundsZeroAndHundredAreAccepted) {
  EXPECT_TRUE(ParseTriggerCondition("device_utilization < 0% for 1s", kRules).ok());
  EXPECT_TRUE(ParseTriggerCondition("device_memory > 100% for 24h", kRules).ok());
}

TEST(TriggerExpressionTest, ControlCharactersAndOverlongInputAreRefused) {
  EXPECT_FALSE(ParseTriggerCondition(std::string("regression\n\x01"), kRules).ok());
  EXPECT_FALSE(ParseTriggerCondition(std::string(300, 'a'), kRules).ok());
}

}  // namespace
}  // namespace fleetprof
