#include "analysis/decimal_time.h"

#include <cstdint>
#include <limits>

#include "gtest/gtest.h"

namespace fleetprof::analysis {
namespace {

int64_t Nanos(std::string_view text) {
  int64_t ns = -12345;
  EXPECT_EQ(ParseMicrosAsNanos(text, &ns), DecimalParse::kOk) << text;
  return ns;
}

DecimalParse Outcome(std::string_view text) {
  int64_t ns;
  return ParseMicrosAsNanos(text, &ns);
}

TEST(DecimalTime, ParsesKinetoTimestampExactly) {
  // As a double this is 4203669604595.4072265625 µs; the text is exact.
  EXPECT_EQ(Nanos("4203669604595.407"), 4203669604595407);
  EXPECT_EQ(Nanos("1712195495505582.988"), 1712195495505582988);
  EXPECT_EQ(Nanos("156.777"), 156777);
}

TEST(DecimalTime, ScalesShortFractionsAndIntegers) {
  EXPECT_EQ(Nanos("1623142623460111"), 1623142623460111000);
  EXPECT_EQ(Nanos("1.5"), 1500);
  EXPECT_EQ(Nanos("0.07"), 70);
  EXPECT_EQ(Nanos("0"), 0);
  EXPECT_EQ(Nanos("-2.25"), -2250);
}

TEST(DecimalTime, TruncatesDigitsBeyondNanosecondsTowardZero) {
  EXPECT_EQ(Nanos("1.123456789"), 1123);
  EXPECT_EQ(Nanos("4203669604595.4079999999"), 4203669604595407);
  EXPECT_EQ(Nanos("0.0009"), 0);
  EXPECT_EQ(Nanos("-1.9999"), -1999);
}

TEST(DecimalTime, AppliesExponentsOnTheDigits) {
  EXPECT_EQ(Nanos("1.5e3"), 1500000);
  EXPECT_EQ(Nanos("4203669604595407e-3"), 4203669604595407);
  EXPECT_EQ(Nanos("4203669604595407E-6"), 4203669604595);  // 4203669604.595407 µs
  EXPECT_EQ(Nanos("2E+2"), 200000);
  EXPECT_EQ(Nanos("7e-4"), 0);
  EXPECT_EQ(Nanos("0e999999"), 0);
  EXPECT_EQ(Nanos("1e-999999"), 0);
}

TEST(DecimalTime, RejectsTextThatIsNotANumber) {
  for (std::string_view text : {"", "-", "abc", "1.", ".5", "1e", "1e+", "NaN", "Infinity",
                                "-Infinity", "1.2.3", "12a", "+1", "0x10", " 1"}) {
    EXPECT_EQ(Outcome(text), DecimalParse::kNotANumber) << "'" << text << "'";
  }
}

TEST(DecimalTime, RejectsValuesOutsideInt64Nanoseconds) {
  EXPECT_EQ(Nanos("9223372036854775.807"), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(Outcome("9223372036854775.808"), DecimalParse::kOutOfRange);
  EXPECT_EQ(Outcome("99999999999999999"), DecimalParse::kOutOfRange);
  EXPECT_EQ(Outcome("123456789012345678901234567890"), DecimalParse::kOutOfRange);
  EXPECT_EQ(Outcome("1e400"), DecimalParse::kOutOfRange);
  EXPECT_EQ(Outcome("-9223372036854776"), DecimalParse::kOutOfRange);
}

TEST(DecimalTime, ParsesJsonIntegersOnly) {
  int64_t value = 0;
  EXPECT_TRUE(ParseJsonInt64("135071", &value));
  EXPECT_EQ(value, 135071);
  EXPECT_TRUE(ParseJsonInt64("-1", &value));
  EXPECT_EQ(value, -1);
  EXPECT_FALSE(ParseJsonInt64("1.0", &value));
  EXPECT_FALSE(ParseJsonInt64("1e3", &value));
  EXPECT_FALSE(ParseJsonInt64("9223372036854775808", &value));
  EXPECT_FALSE(ParseJsonInt64("", &value));
}

}  // namespace
}  // namespace fleetprof::analysis
