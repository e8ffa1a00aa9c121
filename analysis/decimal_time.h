#pragma once
// Exact conversion of Chrome-trace microsecond numbers ("4203669604595.407") to integer
// nanoseconds. Never goes through double: at epoch-sized values a float64 step is 0.25 µs.

#include <cstdint>
#include <string_view>

namespace fleetprof::analysis {

enum class DecimalParse {
  kOk,
  kNotANumber,  // not JSON number syntax (includes NaN/Infinity)
  kOutOfRange,  // does not fit int64 nanoseconds
};

// Parses `text`, a JSON number in microseconds, into nanoseconds: integer part and fraction
// digits scaled by 1000, digits beyond the nanosecond truncated toward zero. Exponents
// ("1.5e3") are applied exactly on the digits.
DecimalParse ParseMicrosAsNanos(std::string_view text, int64_t* ns);

// Parses `text` as a JSON integer (no fraction, no exponent) into int64.
bool ParseJsonInt64(std::string_view text, int64_t* value);

}  // namespace fleetprof::analysis
