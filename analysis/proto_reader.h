#pragma once
// A streaming reader of the protobuf wire format over a ByteSource, for messages far larger
// than memory: it holds one read buffer, reads fields in order and skips what the caller
// does not want. Every length is checked against the end of its enclosing message, so
// random or truncated bytes end in an error naming the byte offset, never in a huge
// allocation or a read past the data.
//
// Errors latch like JsonTokenizer's: methods return false and status() says why.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "analysis/byte_source.h"

namespace fleetprof::analysis {

enum WireType : int {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kFixed32 = 5,
};

// The end offset of the top-level message, which ends with the input.
inline constexpr uint64_t kNoLimit = UINT64_MAX;

class ProtoReader {
 public:
  explicit ProtoReader(ByteSource& source, size_t buffer_bytes = 1 << 20);

  bool ok() const { return status_.ok(); }
  const absl::Status& status() const { return status_; }
  const std::string& source_name() const { return source_.name(); }
  uint64_t Offset() const { return base_offset_ + static_cast<uint64_t>(pos_ - buf_.get()); }

  // True when the input has no more bytes (meaningful at the top level).
  bool AtEof();
  // True while the current message (ending at `limit`) has more fields. Fails when a field
  // ran past `limit`. `message` names it in errors ("XLine").
  bool More(uint64_t limit, const char* message);

  // Reads a field key. Rejects field number 0 and the group / unknown wire types.
  bool ReadTag(uint32_t* field, int* wire_type, const char* message);
  bool ReadVarint(uint64_t* value, const char* what);
  // Reads the length prefix of a length-delimited field and returns its end offset,
  // checked against `limit`.
  bool ReadLength(uint64_t limit, uint64_t* end, const char* what, const char* message);
  // Reads `n` bytes, keeping the first `cap` in *out and skipping the rest.
  bool ReadBytes(uint64_t n, size_t cap, std::string* out, const char* what);
  bool Skip(uint64_t n, const char* what);
  // Skips the value of a field of `wire_type`.
  bool SkipField(int wire_type, uint64_t limit, const char* what, const char* message);

  bool Fail(const std::string& what);
  // Records `error` as it is (a limit's RESOURCE_EXHAUSTED); always returns false.
  bool FailWith(absl::Status error);

  // The cap callers give ReadBytes for names and texts (--max_name_bytes; default 64 KiB).
  void set_name_cap(size_t cap) { name_cap_ = cap; }
  size_t name_cap() const { return name_cap_; }

 private:
  // Makes at least `n` bytes (n <= buffer) available; false at end of input.
  bool Ensure(size_t n);
  bool FailEof(const char* what);
  bool ReadVarintSlow(uint64_t* value, const char* what);

  ByteSource& source_;
  size_t capacity_;
  std::unique_ptr<char[]> buf_;
  const char* pos_;
  char* end_;
  uint64_t base_offset_ = 0;
  bool eof_ = false;
  absl::Status status_;
  size_t name_cap_ = 64 << 10;
};

}  // namespace fleetprof::analysis
