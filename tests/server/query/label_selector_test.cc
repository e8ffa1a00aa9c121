// Pyroscope's (Prometheus's) label selectors as server/query/label_selector.h reads them.

#include "server/query/label_selector.h"

#include "gtest/gtest.h"

namespace fleetprof {
namespace {

const LabelSet kLabels = {{"job", "train"}, {"node", "gpu-3"}, {"rank", "0"}, {"service_name", "train"}};

bool Selects(const std::string& text) {
  absl::StatusOr<LabelSelector> selector = LabelSelector::Parse(text);
  EXPECT_TRUE(selector.ok()) << text << ": " << selector.status();
  return selector.ok() && selector->Matches(kLabels);
}

std::string ErrorOf(const std::string& text) {
  absl::StatusOr<LabelSelector> selector = LabelSelector::Parse(text);
  EXPECT_FALSE(selector.ok()) << text;
  EXPECT_TRUE(absl::IsInvalidArgument(selector.status())) << selector.status();
  return std::string(selector.status().message());
}

TEST(LabelSelector, MatchesWithEachOperatorAsPrometheusDoes) {
  EXPECT_TRUE(Selects(""));
  EXPECT_TRUE(Selects("{}"));
  EXPECT_TRUE(Selects(R"({service_name="train"})"));
  EXPECT_TRUE(Selects(R"( { service_name = "train" , node != "gpu-1", } )"));
  EXPECT_FALSE(Selects(R"({service_name="train", node="gpu-1"})"));
  EXPECT_TRUE(Selects(R"({node=~"gpu-[0-9]+"})"));
  EXPECT_FALSE(Selects(R"({node=~"gpu"})"));  // anchored: the whole value
  EXPECT_TRUE(Selects(R"({node!~"cpu.*", rank=~'0|1'})"));
  EXPECT_TRUE(Selects("{job=`train`}"));
  // A missing label is "": it matches ="" and !="x".
  EXPECT_TRUE(Selects(R"({team="", team!="infra"})"));
  EXPECT_FALSE(Selects(R"({team=~".+"})"));
  EXPECT_FALSE(Selects(R"({job="tr\"ain"} )"));  // an escaped quote is part of the value
}

TEST(LabelSelector, RequiredValueNamesAnEqualityMatcher) {
  absl::StatusOr<LabelSelector> selector = LabelSelector::Parse(R"({service_name="a", node=~"x"})");
  ASSERT_TRUE(selector.ok());
  ASSERT_NE(selector->RequiredValue("service_name"), nullptr);
  EXPECT_EQ(*selector->RequiredValue("service_name"), "a");
  EXPECT_EQ(selector->RequiredValue("node"), nullptr);
}

TEST(LabelSelector, BadSelectorsSayWhatIsWrongAndWhere) {
  EXPECT_NE(ErrorOf(R"(service_name="a")").find("expected '{' at offset 0"), std::string::npos);
  EXPECT_NE(ErrorOf(R"({service_name="a")").find("expected ',' or '}'"), std::string::npos);
  EXPECT_NE(ErrorOf(R"({service_name=a})").find("expected a quoted value"), std::string::npos);
  EXPECT_NE(ErrorOf(R"({service_name~"a"})").find("expected an operator"), std::string::npos);
  EXPECT_NE(ErrorOf(R"({1abc="a"})").find("expected a label name"), std::string::npos);
  EXPECT_NE(ErrorOf(R"({job="a)").find("expected the closing \""), std::string::npos);
  EXPECT_NE(ErrorOf(R"({job=~"(a"})").find("the regex of job does not compile"), std::string::npos);
  EXPECT_NE(ErrorOf(R"({job="a"} x)").find("expected the end after '}'"), std::string::npos);
}

}  // namespace
}  // namespace fleetprof
