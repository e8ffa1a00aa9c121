#pragma once
// A pull tokenizer for JSON over a ByteSource, with a fixed-size refillable buffer: it never
// holds more of the text than one buffer, whatever the file or string size. Tokens that
// cross a refill are carried over. Strings the caller does not keep are skipped without
// copying; kept strings are truncated to a caller-given cap.
//
// Errors latch: every method returns false once an error happened, and status() says why
// ("FILE: unexpected end of input at byte N, expected …"). Byte offsets count from the start
// of the (decompressed) stream.
//
// Skipped values are checked for balanced brackets and terminated strings only, and may
// nest at most max_depth() levels (a deeper value is an error, never a stack overflow:
// nothing here recurses).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "analysis/byte_source.h"

namespace fleetprof::analysis {

inline bool IsJsonSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

class JsonTokenizer {
 public:
  static constexpr size_t kDefaultBufferBytes = 128 << 10;
  // Object keys longer than this are truncated (no key fleetprof reads comes close).
  static constexpr size_t kMaxKeyBytes = 4096;

  explicit JsonTokenizer(ByteSource& source, size_t buffer_bytes = kDefaultBufferBytes);

  bool ok() const { return status_.ok(); }
  const absl::Status& status() const { return status_; }
  // How deep a skipped value may nest (default 64, the trace limit --max_trace_depth).
  void set_max_depth(int64_t depth) { max_depth_ = depth; }
  int64_t max_depth() const { return max_depth_; }

  const std::string& source_name() const { return source_.name(); }
  // Byte offset of the next unread byte.
  uint64_t Offset() const { return base_offset_ + static_cast<uint64_t>(pos_ - buf_.get()); }

  // Skips whitespace; sets *c to the next byte without consuming it. At the end of input
  // fails with "expected <expected>".
  bool Peek(char* c, const char* expected) {
    // Inline fast path for the usual layouts, no space or one space (`"key": value`).
    if (end_ - pos_ >= 2) {
      if (!IsJsonSpace(pos_[0])) {
        *c = pos_[0];
        return true;
      }
      if (!IsJsonSpace(pos_[1])) {
        ++pos_;
        *c = pos_[0];
        return true;
      }
    }
    return PeekSlow(c, expected);
  }
  // True when only whitespace remains. REQUIRES: ok().
  bool AtEnd();

  // For a tokenizer whose source starts at stream byte `offset`, at an element of an array
  // other than its first (the far part of a file that a second thread reads): offsets count
  // from `offset`, and the first NextElement reads a value with no ',' before it. Call first.
  void ResumeInArray(uint64_t offset) {
    base_offset_ = offset;
    after_open_ = true;
  }

  // For a caller that reads a small value straight from the buffer (kineto_event_scan.h):
  // makes at least `want` unread bytes available unless the input ends first (false only on
  // a read error; capped at half the buffer, which a token may otherwise fill), then
  // [cursor(), limit()) are those bytes.
  // ConsumeTo(q) marks the bytes before q, the end of a whole value, as read.
  bool Prefetch(size_t want) {
    want = std::min(want, capacity_ / 2);
    while (static_cast<size_t>(end_ - pos_) < want && Refill()) {
    }
    return ok();
  }
  const char* cursor() const { return pos_; }
  const char* limit() const { return end_; }
  void ConsumeTo(const char* q) {
    pos_ = const_cast<char*>(q);
    after_open_ = false;
  }

  // Consumes '{' / '['. Then call NextMember / NextElement until *done.
  bool BeginObject();
  bool BeginArray();
  // Moves to the next member of the object being read, consuming the separator, and reads
  // its key (a view valid until the next call) and the ':'. *done at '}'.
  bool NextMember(bool* done, std::string_view* key);
  // Moves to the next array element, consuming the separator. *done at ']'.
  bool NextElement(bool* done);

  // Reads a string value (unescaped, UTF-8). The view points into the buffer or into
  // `scratch` and lives until the next call. Content past `cap` bytes is dropped and
  // *truncated set (may be null).
  bool ReadString(std::string_view* out, std::string* scratch, size_t cap, bool* truncated);
  bool SkipString();
  // Reads a bare token: a number, true, false, null, or NaN/Infinity as Python writes them.
  // The view lives until the next call.
  bool ReadScalar(std::string_view* out);
  // Skips one value of any type.
  bool SkipValue();

  // Records an error at the current offset; always returns false.
  bool Fail(const std::string& what);
  // Records `error` as it is (a limit's RESOURCE_EXHAUSTED); always returns false.
  bool FailWith(absl::Status error);
  bool FailUnexpected(char found, const char* expected);

 private:
  // Moves the unread bytes [pos_, end_) to the buffer start and reads more. False at end of
  // input (status unchanged) or on a read error (status set).
  bool Refill();
  bool FailEof(const char* expected);
  bool PeekSlow(char* c, const char* expected);
  // Skips whitespace, refilling; false at end of input (no error set).
  bool SkipSpace();
  bool ReadStringSlow(const char* p, std::string* out, size_t cap, bool* truncated, bool keep);
  bool ReadEscape(std::string* out, size_t cap, bool* truncated, bool keep);
  bool SkipContainer();

  ByteSource& source_;
  size_t capacity_;
  std::unique_ptr<char[]> buf_;
  char* pos_;
  char* end_;
  uint64_t base_offset_ = 0;  // stream offset of buf_[0]
  bool eof_ = false;
  absl::Status status_;
  bool after_open_ = false;  // just consumed '{' or '[': no separator expected
  std::string key_scratch_;
  int64_t max_depth_ = 64;
  std::string skip_stack_;  // SkipContainer's open brackets, kept to reuse its memory
};

}  // namespace fleetprof::analysis
