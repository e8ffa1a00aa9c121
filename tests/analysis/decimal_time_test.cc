#include "analysis/decimal_time.h"

#include <cstdint>
#include <algorithm>
#include <limits>
#include <random>
#include <string>

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

namespace fleetprof::analysis {
namespace {

// The reference: [-]digits[.digits] in nanoseconds with 128-bit integers, one digit at a time.
DecimalParse Reference(const std::string& text, int64_t* ns) {
  size_t i = 0;
  const bool negative = text[0] == '-';
  if (negative) ++i;
  __int128 value = 0;
  for (; i < text.size() && text[i] != '.'; ++i) value = value * 10 + (text[i] - '0');
  int fraction_digits = 0;
  if (i < text.size()) {
    for (++i; i < text.size(); ++i) {
      if (fraction_digits < 3) {
        value = value * 10 + (text[i] - '0');
        ++fraction_digits;
      }
    }
  }
  for (; fraction_digits < 3; ++fraction_digits) value *= 10;
  if (value > std::numeric_limits<int64_t>::max()) return DecimalParse::kOutOfRange;
  *ns = static_cast<int64_t>(negative ? -value : value);
  return DecimalParse::kOk;
}

// Every length of integer part (the eight-digit steps and the digit-by-digit rest meet at
// each), with and without fractions, leading zeros and signs, against the reference.
TEST(DecimalTime, PlainNumbersOfEveryLengthMatchTheReference) {
  std::mt19937_64 random(43);
  const auto digits = [&random](int n, bool leading_zeros) {
    std::string text;
    for (int i = 0; i < n; ++i) {
      text.push_back(static_cast<char>('0' + (leading_zeros && i < n / 2 ? 0 : random() % 10)));
    }
    return text;
  };
  int compared = 0;
  for (int int_digits = 1; int_digits <= 24; ++int_digits) {
    for (int fraction = -1; fraction <= 12; ++fraction) {
      for (int round = 0; round < 40; ++round) {
        std::string text = round % 3 == 0 ? "-" : "";
        text += digits(int_digits, round % 5 == 0);
        if (fraction >= 0) text += "." + digits(std::max(fraction, 1), false);
        if (round % 7 == 0) text[text.size() - 1] = '9';
        int64_t want = 0, got = 0;
        const DecimalParse expected = Reference(text, &want);
        ASSERT_EQ(ParseMicrosAsNanos(text, &got), expected) << text;
        if (expected == DecimalParse::kOk) {
          ASSERT_EQ(got, want) << text;
        }
        ++compared;
      }
    }
  }
  EXPECT_EQ(compared, 24 * 14 * 40);
  // A byte that is no digit anywhere in an eight-digit step.
  for (size_t at = 0; at < 16; ++at) {
    std::string text = "1234567812345678.5";
    text[at] = ':';  // the byte after '9'
    EXPECT_EQ(Outcome(text), DecimalParse::kNotANumber) << text;
    text[at] = '/';  // the byte before '0'
    EXPECT_EQ(Outcome(text), DecimalParse::kNotANumber) << text;
  }
}

}  // namespace
}  // namespace fleetprof::analysis
