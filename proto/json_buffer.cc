#include "proto/json_buffer.h"

#include <algorithm>

#include "common/utf8.h"

namespace fleetprof {
namespace {

constexpr uint64_t kOnes = 0x0101010101010101ULL;
constexpr uint64_t kHighBits = 0x8080808080808080ULL;

// Whether any of the 8 bytes of `w` needs more than a copy: a control character (< 0x20),
// '"', '\\' or a non-ASCII byte (whose sequence must be checked). The classic "has a byte
// below n" bit trick (exact about whether one exists for n <= 128) decides 8 bytes at once,
// so the long ASCII names of kernels and ops are copied a word at a time.
bool NeedsCare(uint64_t w) {
  const auto has_zero_byte = [](uint64_t x) { return (x - kOnes) & ~x & kHighBits; };
  const uint64_t below_space = (w - kOnes * 0x20) & ~w & kHighBits;
  return ((w & kHighBits) | below_space | has_zero_byte(w ^ (kOnes * '"')) | has_zero_byte(w ^ (kOnes * '\\'))) != 0;
}

// Writes s[*i, stop) escaped at `p`, which has room for 6 bytes per input byte plus 3 (a
// valid sequence that starts before `stop` is copied whole, up to 3 bytes past it).
char* WriteEscaped(char* p, std::string_view s, size_t* i, size_t stop) {
  static constexpr char kHex[] = "0123456789abcdef";
  const char* d = s.data();
  size_t k = *i;
  while (k < stop) {
    if (k + 8 <= stop) {
      uint64_t w;
      std::memcpy(&w, d + k, 8);
      if (!NeedsCare(w)) {
        std::memcpy(p, d + k, 8);
        p += 8, k += 8;
        continue;
      }
    }
    const unsigned char c = static_cast<unsigned char>(d[k]);
    if (c >= 0x80) {
      const size_t n = Utf8SequenceLength(s, k);
      if (n > 0) {
        std::memcpy(p, d + k, n);
        p += n, k += n;
      } else {
        p = JsonBuffer::Copy(p, "\xEF\xBF\xBD");  // U+FFFD for the invalid byte
        ++k;
      }
      continue;
    }
    ++k;
    if (c >= 0x20 && c != '"' && c != '\\') {
      *p++ = static_cast<char>(c);
      continue;
    }
    *p++ = '\\';
    switch (c) {
      case '"':
      case '\\':
        *p++ = static_cast<char>(c);
        break;
      case '\n':
        *p++ = 'n';
        break;
      case '\r':
        *p++ = 'r';
        break;
      case '\t':
        *p++ = 't';
        break;
      default:
        p = JsonBuffer::Copy(p, "u00");
        *p++ = kHex[c >> 4];
        *p++ = kHex[c & 15];
    }
  }
  *i = k;
  return p;
}

}  // namespace

void JsonBuffer::Grow(size_t n) {
  // resize, not reserve: the bytes must exist to be written through data().
  out_->resize(std::max({len_ + n, out_->size() * 2, size_t{256}}));
}

void JsonBuffer::AppendString(std::string_view s) {
  // In slices, so that reserving the worst case (6 bytes per byte: \u00XX) stays small for a
  // long string whose bytes are almost all copied as they are.
  constexpr size_t kSlice = 4096;
  Put('"');
  size_t i = 0;
  while (i < s.size()) {
    const size_t stop = std::min(s.size(), i + kSlice);
    Commit(WriteEscaped(Reserve(6 * (stop - i) + 3), s, &i, stop));
  }
  Put('"');
}

}  // namespace fleetprof
