#pragma once
// The output of the JSON writer (proto_json.h): appends to a caller's std::string through a
// raw cursor. A trace window is tens of thousands of tiny pieces (a key, a run of digits, a
// comma); std::string::append re-checks size and capacity for each. Here a piece reserves its
// worst case once and is written with plain stores: the string is grown ahead in doubling
// steps and cut back to what was written by Finish() (the destructor calls it).

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace fleetprof {

class JsonBuffer {
 public:
  // Longest text of one number: "-9223372036854775808" is 20 bytes, the shortest form of a
  // double at most 24 ("-2.2250738585072014e-308").
  static constexpr size_t kMaxNumber = 32;

  explicit JsonBuffer(std::string* out) : out_(out), len_(out->size()) {}
  ~JsonBuffer() { Finish(); }
  JsonBuffer(const JsonBuffer&) = delete;
  JsonBuffer& operator=(const JsonBuffer&) = delete;

  // At least `n` writable bytes after the text so far; Commit(end) keeps those up to `end`.
  // The pointer is valid until the next Reserve.
  char* Reserve(size_t n) {
    if (out_->size() - len_ < n) Grow(n);
    return out_->data() + len_;
  }
  void Commit(char* end) { len_ = static_cast<size_t>(end - out_->data()); }

  void Put(char c) {
    *Reserve(1) = c;
    ++len_;
  }
  void Append(std::string_view s) { Commit(Copy(Reserve(s.size()), s)); }
  // `s` as a JSON string literal: quotes, escapes, U+FFFD for each byte of invalid UTF-8.
  void AppendString(std::string_view s);

  // Cuts the string back to the written text.
  void Finish() { out_->resize(len_); }

  static char* Copy(char* p, std::string_view s) {
    // An empty view may have no data pointer, and memcpy from null is undefined even for 0 bytes.
    if (!s.empty()) std::memcpy(p, s.data(), s.size());
    return p + s.size();
  }
  template <typename Int>
  static char* Integer(char* p, Int v) {
    return std::to_chars(p, p + kMaxNumber, v).ptr;
  }
  // The shortest text that reads back as the same double (floats print as their double).
  static char* Double(char* p, double v) { return std::to_chars(p, p + kMaxNumber, v).ptr; }

 private:
  void Grow(size_t n);

  std::string* out_;
  size_t len_;  // bytes of *out_ written; the rest up to out_->size() is room
};

}  // namespace fleetprof
