#pragma once
// Byte-scanning helpers of the JSON tokenizer, inline because they are its inner loops.

#include <cstddef>
#include <cstdint>
#include <string>

#include "analysis/json_tokenizer.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace fleetprof::analysis::json_scan {

// The first '"' or '\\' in [p, end), or end. Strings are most of a trace's bytes, so this
// scan is the tokenizer's inner loop.
inline const char* FindQuoteOrBackslash(const char* p, const char* end) {
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  while (end - p >= 16) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    int mask =
        _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)));
    if (mask != 0) return p + __builtin_ctz(static_cast<unsigned>(mask));
    p += 16;
  }
#endif
  while (p < end && *p != '"' && *p != '\\') ++p;
  return p;
}

// The first byte in [p, end) that is not JSON whitespace, or end. Pretty-printed traces
// indent every line, so runs of spaces are common enough to scan 16 bytes at a time.
inline const char* SkipSpaceRun(const char* p, const char* end) {
  // Most runs are one space ("key": value) or none.
  for (int i = 0; i < 2; ++i) {
    if (p == end || !IsJsonSpace(*p)) return p;
    ++p;
  }
#if defined(__SSE2__)
  const __m128i space = _mm_set1_epi8(' ');
  const __m128i newline = _mm_set1_epi8('\n');
  const __m128i tab = _mm_set1_epi8('\t');
  const __m128i cr = _mm_set1_epi8('\r');
  while (end - p >= 16) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    __m128i ws = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, space), _mm_cmpeq_epi8(v, newline)),
                              _mm_or_si128(_mm_cmpeq_epi8(v, tab), _mm_cmpeq_epi8(v, cr)));
    unsigned mask = static_cast<unsigned>(_mm_movemask_epi8(ws)) ^ 0xFFFFu;
    if (mask != 0) return p + __builtin_ctz(mask);
    p += 16;
  }
#endif
  while (p < end && IsJsonSpace(*p)) ++p;
  return p;
}

constexpr bool IsScalarChar(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '.' ||
         c == '-' || c == '+';
}

inline void AppendCapped(std::string* out, const char* p, size_t n, size_t cap, bool* truncated) {
  size_t room = out->size() < cap ? cap - out->size() : 0;
  if (n > room) {
    n = room;
    if (truncated != nullptr) *truncated = true;
  }
  out->append(p, n);
}

inline void AppendUtf8(std::string* out, uint32_t cp, size_t cap, bool* truncated) {
  char bytes[4];
  size_t n;
  if (cp < 0x80) {
    bytes[0] = static_cast<char>(cp);
    n = 1;
  } else if (cp < 0x800) {
    bytes[0] = static_cast<char>(0xC0 | (cp >> 6));
    bytes[1] = static_cast<char>(0x80 | (cp & 0x3F));
    n = 2;
  } else if (cp < 0x10000) {
    bytes[0] = static_cast<char>(0xE0 | (cp >> 12));
    bytes[1] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    bytes[2] = static_cast<char>(0x80 | (cp & 0x3F));
    n = 3;
  } else {
    bytes[0] = static_cast<char>(0xF0 | (cp >> 18));
    bytes[1] = static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    bytes[2] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    bytes[3] = static_cast<char>(0x80 | (cp & 0x3F));
    n = 4;
  }
  AppendCapped(out, bytes, n, cap, truncated);
}

// Four hex digits at p, or -1.
inline int ParseHex4(const char* p) {
  int value = 0;
  for (int i = 0; i < 4; ++i) {
    char c = p[i];
    int digit;
    if (c >= '0' && c <= '9')
      digit = c - '0';
    else if (c >= 'a' && c <= 'f')
      digit = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F')
      digit = c - 'A' + 10;
    else
      return -1;
    value = value * 16 + digit;
  }
  return value;
}

}  // namespace fleetprof::analysis::json_scan
