#include "analysis/decimal_time.h"

#include <bit>
#include <cstddef>
#include <cstring>
#include <limits>

namespace fleetprof::analysis {
namespace {

constexpr uint64_t kMaxMagnitude = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

inline bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// value = value * 10 + digit, false on passing kMaxMagnitude.
inline bool PushDigit(uint64_t* value, char digit) {
  if (*value > (kMaxMagnitude - static_cast<uint64_t>(digit - '0')) / 10) return false;
  *value = *value * 10 + static_cast<uint64_t>(digit - '0');
  return true;
}

struct NumberParts {
  bool negative = false;
  std::string_view int_digits;
  std::string_view frac_digits;
  bool has_exponent = false;
  int64_t exponent = 0;  // saturated at +-100000
};

bool SplitNumber(std::string_view text, NumberParts* parts) {
  size_t i = 0;
  const size_t n = text.size();
  if (i < n && text[i] == '-') {
    parts->negative = true;
    ++i;
  }
  size_t start = i;
  while (i < n && IsDigit(text[i])) ++i;
  if (i == start) return false;
  parts->int_digits = text.substr(start, i - start);
  if (i < n && text[i] == '.') {
    start = ++i;
    while (i < n && IsDigit(text[i])) ++i;
    if (i == start) return false;
    parts->frac_digits = text.substr(start, i - start);
  }
  if (i < n && (text[i] == 'e' || text[i] == 'E')) {
    parts->has_exponent = true;
    ++i;
    bool negative_exponent = false;
    if (i < n && (text[i] == '+' || text[i] == '-')) negative_exponent = text[i++] == '-';
    start = i;
    int64_t exponent = 0;
    while (i < n && IsDigit(text[i])) {
      if (exponent < 100000) exponent = exponent * 10 + (text[i] - '0');
      ++i;
    }
    if (i == start) return false;
    parts->exponent = negative_exponent ? -exponent : exponent;
  }
  return i == n;
}

// The general case: digits D scaled by 10^scale, truncated toward zero.
DecimalParse ScaleDigits(const NumberParts& parts, int64_t scale, uint64_t* magnitude) {
  // Concatenated digits, leading zeros dropped; a view pair avoids copying.
  std::string_view a = parts.int_digits;
  std::string_view b = parts.frac_digits;
  while (!a.empty() && a.front() == '0') a.remove_prefix(1);
  if (a.empty()) {
    while (!b.empty() && b.front() == '0') b.remove_prefix(1);
  }
  const int64_t total = static_cast<int64_t>(a.size() + b.size());
  int64_t keep = total + (scale < 0 ? scale : 0);
  *magnitude = 0;
  if (total == 0 || keep <= 0) return DecimalParse::kOk;
  // Without leading zeros, more than 19 digits cannot fit int64; 19 are checked exactly.
  if (keep > 19 || (scale > 0 && keep + scale > 19)) return DecimalParse::kOutOfRange;
  for (int64_t i = 0; i < keep; ++i) {
    char c = i < static_cast<int64_t>(a.size()) ? a[i] : b[i - a.size()];
    if (!PushDigit(magnitude, c)) return DecimalParse::kOutOfRange;
  }
  for (int64_t i = 0; i < scale; ++i) {
    if (!PushDigit(magnitude, '0')) return DecimalParse::kOutOfRange;
  }
  return DecimalParse::kOk;
}

// The eight ASCII digits at p as a number, or -1 when one of the bytes is no digit: a few
// multiplications on one 64-bit load instead of eight dependent steps (the SWAR method of
// fast_float and simdjson). Little-endian machines only; elsewhere always -1.
inline int64_t EightDigits(const char* p) {
  if constexpr (std::endian::native != std::endian::little) return -1;
  uint64_t v;
  std::memcpy(&v, p, 8);
  // Every byte in 0x30-0x39: its high nibble is 3, and adding 6 keeps it 3.
  if (((v & 0xF0F0F0F0F0F0F0F0) | (((v + 0x0606060606060606) & 0xF0F0F0F0F0F0F0F0) >> 4)) != 0x3333333333333333) {
    return -1;
  }
  v -= 0x3030303030303030;
  v = (v * 10) + (v >> 8);  // pairs of digits
  v = (((v & 0x000000FF000000FF) * (100 + (1000000ULL << 32))) +
       (((v >> 16) & 0x000000FF000000FF) * (1 + (10000ULL << 32)))) >>
      32;
  return static_cast<int64_t>(v);
}

// The form Kineto writes, handled without splitting: [-]digits[.digits], at most 16
// integer digits. Returns false to defer to the general path.
inline bool ParsePlainMicros(std::string_view text, int64_t* ns, DecimalParse* result) {
  const char* p = text.data();
  const char* const end = p + text.size();
  bool negative = p < end && *p == '-';
  if (negative) ++p;
  const char* const int_start = p;
  uint64_t value = 0;
  // Epoch microseconds have 16 integer digits: two steps of eight.
  while (end - p >= 8 && p - int_start <= 8) {
    const int64_t eight = EightDigits(p);
    if (eight < 0) break;
    value = value * 100000000 + static_cast<uint64_t>(eight);
    p += 8;
  }
  while (p < end && IsDigit(*p) && p - int_start < 16) value = value * 10 + (*p++ - '0');
  if (p == int_start || (p < end && IsDigit(*p))) return false;
  uint64_t frac = 0;
  int frac_digits = 0;
  if (p < end && *p == '.') {
    const char* const frac_start = ++p;
    for (; p < end && IsDigit(*p); ++p) {
      if (frac_digits < 3) {
        frac = frac * 10 + (*p - '0');
        ++frac_digits;
      }
    }
    if (p == frac_start) {
      *result = DecimalParse::kNotANumber;
      return true;
    }
  }
  if (p != end) return false;  // exponent or garbage: the general path decides
  for (; frac_digits < 3; ++frac_digits) frac *= 10;
  value = value * 1000 + frac;  // < 1e19: no uint64 overflow
  if (value > kMaxMagnitude) {
    *result = DecimalParse::kOutOfRange;
    return true;
  }
  *ns = negative ? -static_cast<int64_t>(value) : static_cast<int64_t>(value);
  *result = DecimalParse::kOk;
  return true;
}

}  // namespace

DecimalParse ParseMicrosAsNanos(std::string_view text, int64_t* ns) {
  DecimalParse fast;
  if (ParsePlainMicros(text, ns, &fast)) return fast;
  NumberParts parts;
  if (!SplitNumber(text, &parts)) return DecimalParse::kNotANumber;
  uint64_t magnitude = 0;
  if (!parts.has_exponent) {
    // Fast path, the form Kineto writes: integer part, then three fraction digits at most
    // matter (ns); the rest is truncated.
    for (char c : parts.int_digits) {
      if (!PushDigit(&magnitude, c)) return DecimalParse::kOutOfRange;
    }
    for (int i = 0; i < 3; ++i) {
      char c = i < static_cast<int>(parts.frac_digits.size()) ? parts.frac_digits[i] : '0';
      if (!PushDigit(&magnitude, c)) return DecimalParse::kOutOfRange;
    }
  } else {
    int64_t scale = parts.exponent + 3 - static_cast<int64_t>(parts.frac_digits.size());
    DecimalParse result = ScaleDigits(parts, scale, &magnitude);
    if (result != DecimalParse::kOk) return result;
  }
  *ns = parts.negative ? -static_cast<int64_t>(magnitude) : static_cast<int64_t>(magnitude);
  return DecimalParse::kOk;
}

bool ParseJsonInt64(std::string_view text, int64_t* value) {
  NumberParts parts;
  if (!SplitNumber(text, &parts) || !parts.frac_digits.empty() || parts.has_exponent) {
    return false;
  }
  uint64_t magnitude = 0;
  for (char c : parts.int_digits) {
    if (!PushDigit(&magnitude, c)) return false;
  }
  *value = parts.negative ? -static_cast<int64_t>(magnitude) : static_cast<int64_t>(magnitude);
  return true;
}

}  // namespace fleetprof::analysis
