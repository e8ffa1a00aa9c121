#include "analysis/json_tokenizer.h"

#include <cstring>

#include "absl/strings/str_cat.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace fleetprof::analysis {
namespace {

// The first '"' or '\\' in [p, end), or end. Strings are most of a trace's bytes, so this
// scan is the tokenizer's inner loop.
inline const char* FindQuoteOrBackslash(const char* p, const char* end) {
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  while (end - p >= 16) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    int mask = _mm_movemask_epi8(
        _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)));
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

inline bool IsScalarChar(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         c == '.' || c == '-' || c == '+';
}

void AppendCapped(std::string* out, const char* p, size_t n, size_t cap, bool* truncated) {
  size_t room = out->size() < cap ? cap - out->size() : 0;
  if (n > room) {
    n = room;
    if (truncated != nullptr) *truncated = true;
  }
  out->append(p, n);
}

void AppendUtf8(std::string* out, uint32_t cp, size_t cap, bool* truncated) {
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
int ParseHex4(const char* p) {
  int value = 0;
  for (int i = 0; i < 4; ++i) {
    char c = p[i];
    int digit;
    if (c >= '0' && c <= '9') digit = c - '0';
    else if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') digit = c - 'A' + 10;
    else return -1;
    value = value * 16 + digit;
  }
  return value;
}

std::string Printable(char c) {
  if (c >= 0x20 && c < 0x7f) return std::string("'") + c + "'";
  return absl::StrCat("byte 0x", absl::Hex(static_cast<unsigned char>(c), absl::kZeroPad2));
}

}  // namespace

JsonTokenizer::JsonTokenizer(ByteSource& source, size_t buffer_bytes)
    : source_(source),
      capacity_(buffer_bytes < 64 ? 64 : buffer_bytes),
      buf_(new char[capacity_]),
      pos_(buf_.get()),
      end_(buf_.get()) {}

bool JsonTokenizer::Fail(const std::string& what) {
  if (status_.ok()) {
    status_ = absl::InvalidArgumentError(absl::StrCat(source_.name(), ": ", what, " at byte ", Offset()));
  }
  return false;
}

bool JsonTokenizer::FailEof(const char* expected) {
  if (status_.ok()) {
    status_ = absl::InvalidArgumentError(absl::StrCat(
        source_.name(), ": unexpected end of input at byte ", Offset(), ", expected ", expected));
  }
  return false;
}

bool JsonTokenizer::FailUnexpected(char found, const char* expected) {
  if (status_.ok()) {
    status_ = absl::InvalidArgumentError(absl::StrCat(source_.name(), ": unexpected ", Printable(found),
                                                      " at byte ", Offset(), ", expected ", expected));
  }
  return false;
}

bool JsonTokenizer::Refill() {
  if (eof_ || !status_.ok()) return false;
  size_t keep = static_cast<size_t>(end_ - pos_);
  if (pos_ != buf_.get()) {
    std::memmove(buf_.get(), pos_, keep);
    base_offset_ += static_cast<uint64_t>(pos_ - buf_.get());
    pos_ = buf_.get();
    end_ = pos_ + keep;
  }
  if (keep == capacity_) return Fail(absl::StrCat("token longer than ", capacity_, " bytes"));
  absl::StatusOr<size_t> got = source_.Read(end_, capacity_ - keep);
  if (!got.ok()) {
    status_ = got.status();
    return false;
  }
  if (*got == 0) {
    eof_ = true;
    return false;
  }
  end_ += *got;
  return true;
}

bool JsonTokenizer::SkipSpace() {
  for (;;) {
    const char* p = SkipSpaceRun(pos_, end_);
    pos_ = const_cast<char*>(p);
    if (p < end_) return true;
    if (!Refill()) return false;
  }
}

bool JsonTokenizer::PeekSlow(char* c, const char* expected) {
  if (!SkipSpace()) return ok() ? FailEof(expected) : false;
  *c = *pos_;
  return true;
}

bool JsonTokenizer::AtEnd() { return !SkipSpace() && ok(); }

bool JsonTokenizer::BeginObject() {
  char c = 0;
  if (!Peek(&c, "'{'")) return false;
  if (c != '{') return FailUnexpected(c, "'{'");
  ++pos_;
  after_open_ = true;
  return true;
}

bool JsonTokenizer::BeginArray() {
  char c = 0;
  if (!Peek(&c, "'['")) return false;
  if (c != '[') return FailUnexpected(c, "'['");
  ++pos_;
  after_open_ = true;
  return true;
}

bool JsonTokenizer::NextMember(bool* done, std::string_view* key) {
  char c = 0;
  if (!Peek(&c, after_open_ ? "'\"' or '}'" : "',' or '}'")) return false;
  if (c == '}') {
    ++pos_;
    after_open_ = false;
    *done = true;
    return true;
  }
  if (!after_open_) {
    if (c != ',') return FailUnexpected(c, "',' or '}'");
    ++pos_;
    if (!Peek(&c, "'\"'")) return false;
  }
  after_open_ = false;
  *done = false;
  if (c != '"') return FailUnexpected(c, "'\"' (object key)");
  if (!ReadString(key, &key_scratch_, kMaxKeyBytes, nullptr)) return false;
  if (pos_ < end_ && *pos_ == ':') {  // the usual "key": layout, no refill needed
    ++pos_;
    return true;
  }
  // Finding the ':' may refill the buffer, which would move a key that points into it.
  if (key->data() != key_scratch_.data()) {
    key_scratch_.assign(key->data(), key->size());
    *key = key_scratch_;
  }
  if (!Peek(&c, "':'")) return false;
  if (c != ':') return FailUnexpected(c, "':'");
  ++pos_;
  return true;
}

bool JsonTokenizer::NextElement(bool* done) {
  char c = 0;
  if (!Peek(&c, after_open_ ? "value or ']'" : "',' or ']'")) return false;
  if (c == ']') {
    ++pos_;
    after_open_ = false;
    *done = true;
    return true;
  }
  if (!after_open_) {
    if (c != ',') return FailUnexpected(c, "',' or ']'");
    ++pos_;
  }
  after_open_ = false;
  *done = false;
  return true;
}

bool JsonTokenizer::ReadString(std::string_view* out, std::string* scratch, size_t cap,
                               bool* truncated) {
  char c = 0;
  if (!Peek(&c, "string")) return false;
  if (c != '"') return FailUnexpected(c, "string");
  const char* p = pos_ + 1;
  const char* q = FindQuoteOrBackslash(p, end_);
  if (q < end_ && *q == '"') {
    size_t n = static_cast<size_t>(q - p);
    if (n > cap) {
      n = cap;
      if (truncated != nullptr) *truncated = true;
    }
    *out = std::string_view(p, n);
    pos_ = const_cast<char*>(q) + 1;
    return true;
  }
  scratch->clear();
  if (!ReadStringSlow(p, scratch, cap, truncated, true)) return false;
  *out = *scratch;
  return true;
}

bool JsonTokenizer::SkipString() {
  char c = 0;
  if (!Peek(&c, "string")) return false;
  if (c != '"') return FailUnexpected(c, "string");
  return ReadStringSlow(pos_ + 1, nullptr, 0, nullptr, false);
}

// Reads the rest of a string from p (just past the opening quote or a piece already
// scanned), refilling as often as needed: a 100 MB string costs one buffer of memory.
bool JsonTokenizer::ReadStringSlow(const char* p, std::string* out, size_t cap, bool* truncated,
                                   bool keep) {
  pos_ = const_cast<char*>(p);
  for (;;) {
    const char* q = FindQuoteOrBackslash(pos_, end_);
    if (keep) AppendCapped(out, pos_, static_cast<size_t>(q - pos_), cap, truncated);
    pos_ = const_cast<char*>(q);
    if (q == end_) {
      if (!Refill()) return ok() ? FailEof("'\"' closing the string") : false;
      continue;
    }
    if (*q == '"') {
      ++pos_;
      return true;
    }
    if (!ReadEscape(out, cap, truncated, keep)) return false;
  }
}

// pos_ is at a backslash. Up to 12 bytes (a surrogate pair) are made available first.
bool JsonTokenizer::ReadEscape(std::string* out, size_t cap, bool* truncated, bool keep) {
  if (end_ - pos_ < 12) {
    Refill();
    if (!ok()) return false;
  }
  if (end_ - pos_ < 2) return FailEof("escape sequence");
  char c = pos_[1];
  char simple = 0;
  switch (c) {
    case '"': simple = '"'; break;
    case '\\': simple = '\\'; break;
    case '/': simple = '/'; break;
    case 'b': simple = '\b'; break;
    case 'f': simple = '\f'; break;
    case 'n': simple = '\n'; break;
    case 'r': simple = '\r'; break;
    case 't': simple = '\t'; break;
    case 'u': break;
    default:
      return Fail(absl::StrCat("invalid escape '\\", std::string(1, c), "'"));
  }
  if (simple != 0) {
    if (keep) AppendCapped(out, &simple, 1, cap, truncated);
    pos_ += 2;
    return true;
  }
  if (end_ - pos_ < 6) return FailEof("4 hex digits of a \\u escape");
  int unit = ParseHex4(pos_ + 2);
  if (unit < 0) return Fail("invalid \\u escape");
  pos_ += 6;
  uint32_t cp = static_cast<uint32_t>(unit);
  if (cp >= 0xD800 && cp <= 0xDBFF && end_ - pos_ >= 6 && pos_[0] == '\\' && pos_[1] == 'u') {
    int low = ParseHex4(pos_ + 2);
    if (low >= 0xDC00 && low <= 0xDFFF) {
      cp = 0x10000 + ((cp - 0xD800) << 10) + (static_cast<uint32_t>(low) - 0xDC00);
      pos_ += 6;
    }
  }
  if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xFFFD;  // lone surrogate
  if (keep) AppendUtf8(out, cp, cap, truncated);
  return true;
}

bool JsonTokenizer::ReadScalar(std::string_view* out) {
  char c = 0;
  if (!Peek(&c, "value")) return false;
  size_t n = 0;
  for (;;) {
    while (pos_ + n < end_ && IsScalarChar(pos_[n])) ++n;
    if (pos_ + n < end_) break;
    if (!Refill()) {
      if (!ok()) return false;
      break;  // the token ends at the end of input
    }
  }
  if (n == 0) return FailUnexpected(c, "value");
  *out = std::string_view(pos_, n);
  pos_ += n;
  return true;
}

bool JsonTokenizer::SkipValue() {
  char c = 0;
  if (!Peek(&c, "value")) return false;
  if (c == '"') return SkipString();
  if (c == '{' || c == '[') return SkipContainer();
  std::string_view token;
  if (!ReadScalar(&token)) return false;
  char first = token[0];
  bool plausible = (first >= '0' && first <= '9') || first == '-' || token == "true" ||
                   token == "false" || token == "null" || token == "NaN" || token == "Infinity";
  if (!plausible) {
    pos_ -= token.size();
    return FailUnexpected(first, "value");
  }
  return true;
}

// Skips an object or array with an explicit bit stack (1 = object) instead of recursion.
bool JsonTokenizer::SkipContainer() {
  uint64_t stack = 0;
  int depth = 0;
  for (;;) {
    char* p = pos_;
    while (p < end_) {
      char c = *p;
      if (c == '"') {
        if (!ReadStringSlow(p + 1, nullptr, 0, nullptr, false)) return false;
        p = pos_;
        continue;
      }
      if (c == '{' || c == '[') {
        if (depth == kMaxSkipDepth) {
          pos_ = p;
          return Fail(absl::StrCat("value nested deeper than ", kMaxSkipDepth, " levels"));
        }
        stack = (stack << 1) | (c == '{' ? 1u : 0u);
        ++depth;
      } else if (c == '}' || c == ']') {
        bool object = (stack & 1) != 0;
        if (object != (c == '}')) {
          pos_ = p;
          return FailUnexpected(c, object ? "'}'" : "']'");
        }
        stack >>= 1;
        if (--depth == 0) {
          pos_ = p + 1;
          return true;
        }
      }
      ++p;
    }
    pos_ = p;
    if (!Refill()) return ok() ? FailEof("the end of a nested value") : false;
  }
}

}  // namespace fleetprof::analysis
