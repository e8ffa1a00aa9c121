// Strings from traces are made valid UTF-8 before they are stored or printed, and a name cap
// never cuts a character in half (common/utf8.h, the readers, the summary).

#include <string>

#include "analysis/trace_events.h"
#include "analysis/trace_summary.h"
#include "common/utf8.h"
#include "gtest/gtest.h"
#include "tests/analysis/analysis_test_util.h"

namespace fleetprof {
namespace {

TEST(Utf8, ValidTextIsLeftAlone) {
  std::string s = "résumé € 𝄞 plain";
  EXPECT_EQ(MakeValidUtf8(&s), 0);
  EXPECT_EQ(s, "résumé € 𝄞 plain");
}

TEST(Utf8, EachInvalidByteBecomesOneReplacement) {
  struct Case {
    std::string in, out;
    int64_t replaced;
  };
  const Case cases[] = {
      {"a\xff" "b", "a\uFFFD" "b", 1},
      {"\xc0\x80", "\uFFFD\uFFFD", 2},                   // overlong NUL
      {"\xed\xa0\x80", "\uFFFD\uFFFD\uFFFD", 3},          // a surrogate
      {"\xf4\x90\x80\x80", "\uFFFD\uFFFD\uFFFD\uFFFD", 4},  // past U+10FFFF
      {"ok\xe2\x82", "ok\uFFFD\uFFFD", 2},               // a sequence that stops short
  };
  for (const Case& c : cases) {
    std::string s = c.in;
    EXPECT_EQ(MakeValidUtf8(&s), c.replaced) << c.out;
    EXPECT_EQ(s, c.out);
  }
}

TEST(Utf8, CapsCutOnACharacterBoundary) {
  const std::string euros = "€€€";  // 3 bytes each
  EXPECT_EQ(Utf8CutPoint(euros, 4), 3u);
  EXPECT_EQ(Utf8CutPoint(euros, 6), 6u);
  EXPECT_EQ(Utf8CutPoint(euros, 2), 0u);
  EXPECT_EQ(Utf8CutPoint(euros, 100), 9u);
  std::string cut = euros.substr(0, 7);
  TrimIncompleteUtf8Tail(&cut);
  EXPECT_EQ(cut, "€€");
  std::string whole = "a€";
  TrimIncompleteUtf8Tail(&whole);
  EXPECT_EQ(whole, "a€");
}

// The reader's 64 KiB name cap, on both of its paths (a plain string and one with escapes).
TEST(Utf8, ReaderNameCapKeepsWholeCharacters) {
  std::string name;
  for (int i = 0; i < 30000; ++i) name += "€";  // 90,000 bytes
  for (const std::string& escaped : {name, "\\n" + name}) {
    auto summary = analysis::testing::AnalyzeJson(analysis::testing::TraceWithEvents(
        R"({"ph":"X","cat":"kernel","name":")" + escaped + R"(","pid":0,"tid":7,"ts":1,"dur":2,"args":{"device":0}})"));
    ASSERT_TRUE(summary.ok()) << summary.status();
    ASSERT_EQ(summary->kernels.size(), 1u);
    const std::string& kept = summary->kernels[0].name;
    EXPECT_LE(kept.size(), static_cast<size_t>(analysis::TraceLimits().max_name_bytes));
    EXPECT_GT(kept.size(), static_cast<size_t>(analysis::TraceLimits().max_name_bytes) - 4);
    std::string copy = kept;
    EXPECT_EQ(MakeValidUtf8(&copy), 0) << "the cap split a character";
    EXPECT_EQ(summary->invalid_utf8_replacements, 0);
  }
}

TEST(Utf8, InvalidBytesInATraceAreReplacedAndCounted) {
  auto summary = analysis::testing::AnalyzeJson(
      R"({"distributedInfo":{"rank":"r)" "\xe9" R"("},"traceEvents":[)"
      R"({"ph":"X","cat":"kernel","name":"bad)" "\xff\xfe" R"(kernel","pid":0,"tid":7,"ts":1,"dur":2,"args":{"device":0}},)"
      R"({"ph":"X","cat":"cpu_op","name":"op)" "\xc3" R"(","pid":1,"tid":1,"ts":0,"dur":5}]})");
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->kernels.at(0).name, "bad\uFFFD\uFFFDkernel");
  EXPECT_EQ(summary->ops.at(0).name, "op\uFFFD");
  EXPECT_EQ(summary->metadata.at("rank"), "r\uFFFD");
  EXPECT_EQ(summary->invalid_utf8_replacements, 4);
}

}  // namespace
}  // namespace fleetprof
