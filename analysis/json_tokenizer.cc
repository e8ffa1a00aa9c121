#include "analysis/json_tokenizer.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "analysis/json_scan.h"
#include "analysis/trace_limits.h"
#include "common/utf8.h"

namespace fleetprof::analysis {

using json_scan::AppendCapped;
using json_scan::AppendUtf8;
using json_scan::FindQuoteOrBackslash;
using json_scan::IsScalarChar;
using json_scan::ParseHex4;
using json_scan::SkipSpaceRun;

namespace {

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
    status_ =
        absl::InvalidArgumentError(absl::StrCat(source_.name(), ": ", what, " at byte ", Offset()));
  }
  return false;
}

bool JsonTokenizer::FailWith(absl::Status error) {
  if (status_.ok()) status_ = std::move(error);
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
    status_ =
        absl::InvalidArgumentError(absl::StrCat(source_.name(), ": unexpected ", Printable(found),
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
      n = Utf8CutPoint(std::string_view(p, n), cap);  // never half a character
      if (truncated != nullptr) *truncated = true;
    }
    *out = std::string_view(p, n);
    pos_ = const_cast<char*>(q) + 1;
    return true;
  }
  scratch->clear();
  bool cut = false;
  if (!ReadStringSlow(p, scratch, cap, &cut, true)) return false;
  if (cut) {
    TrimIncompleteUtf8Tail(scratch);
    if (truncated != nullptr) *truncated = true;
  }
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
  while (end_ - pos_ < 12 && Refill()) {
  }
  if (!ok()) return false;
  if (end_ - pos_ < 2) return FailEof("escape sequence");
  char c = pos_[1];
  char simple = 0;
  switch (c) {
    case '"':
      simple = '"';
      break;
    case '\\':
      simple = '\\';
      break;
    case '/':
      simple = '/';
      break;
    case 'b':
      simple = '\b';
      break;
    case 'f':
      simple = '\f';
      break;
    case 'n':
      simple = '\n';
      break;
    case 'r':
      simple = '\r';
      break;
    case 't':
      simple = '\t';
      break;
    case 'u':
      break;
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

// Skips an object or array with an explicit stack of open brackets instead of recursion.
bool JsonTokenizer::SkipContainer() {
  skip_stack_.clear();
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
        if (static_cast<int64_t>(skip_stack_.size()) >= max_depth_) {
          pos_ = p;
          return FailWith(TraceLimitError(source_.name(), "levels of JSON nesting", max_depth_,
                                          "max_trace_depth", Offset()));
        }
        skip_stack_.push_back(c);
      } else if (c == '}' || c == ']') {
        bool object = skip_stack_.back() == '{';
        if (object != (c == '}')) {
          pos_ = p;
          return FailUnexpected(c, object ? "'}'" : "']'");
        }
        skip_stack_.pop_back();
        if (skip_stack_.empty()) {
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
