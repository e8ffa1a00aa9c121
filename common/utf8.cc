#include "common/utf8.h"

namespace fleetprof {

size_t Utf8SequenceLength(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80) return 1;
  size_t n;
  uint32_t min;
  uint32_t cp;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2, min = 0x80, cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3, min = 0x800, cp = c & 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4, min = 0x10000, cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

size_t Utf8CutPoint(std::string_view s, size_t max) {
  if (s.size() <= max) return s.size();
  size_t n = max;
  // Back over continuation bytes (10xxxxxx) to the start of the character the cap splits.
  for (int k = 0; k < 3 && n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80; ++k) --n;
  return n;
}

void TrimIncompleteUtf8Tail(std::string* s) {
  // The last lead byte within the final four: if its sequence does not fit, it was cut.
  const size_t size = s->size();
  for (size_t back = 1; back <= 4 && back <= size; ++back) {
    const unsigned char c = static_cast<unsigned char>((*s)[size - back]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte: keep looking for its lead
    const size_t want = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    if (want > back) s->resize(size - back);
    return;
  }
}

int64_t MakeValidUtf8(std::string* s) {
  size_t i = 0;
  while (i < s->size()) {  // the common case: nothing to replace, no copy
    const size_t n = Utf8SequenceLength(*s, i);
    if (n == 0) break;
    i += n;
  }
  if (i == s->size()) return 0;
  std::string out(s->data(), i);
  int64_t replaced = 0;
  while (i < s->size()) {
    const size_t n = Utf8SequenceLength(*s, i);
    if (n > 0) {
      out.append(*s, i, n);
      i += n;
    } else {
      out.append("\xEF\xBF\xBD");
      ++replaced;
      ++i;
    }
  }
  *s = std::move(out);
  return replaced;
}

}  // namespace fleetprof
