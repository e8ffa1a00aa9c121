#include "analysis/proto_reader.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/utf8.h"

namespace fleetprof::analysis {

ProtoReader::ProtoReader(ByteSource& source, size_t buffer_bytes)
    : source_(source),
      capacity_(std::max<size_t>(buffer_bytes, 64)),
      buf_(new char[capacity_]),
      pos_(buf_.get()),
      end_(buf_.get()) {}

bool ProtoReader::Fail(const std::string& what) {
  if (status_.ok()) {
    status_ = absl::InvalidArgumentError(
        absl::StrCat(source_.name(), ": invalid XSpace at byte ", Offset(), ": ", what));
  }
  return false;
}

bool ProtoReader::FailWith(absl::Status error) {
  if (status_.ok()) status_ = std::move(error);
  return false;
}

bool ProtoReader::FailEof(const char* what) {
  if (status_.ok()) {
    status_ = absl::InvalidArgumentError(absl::StrCat(
        source_.name(), ": unexpected end of input at byte ", Offset(), ", expected ", what));
  }
  return false;
}

bool ProtoReader::Ensure(size_t n) {
  if (static_cast<size_t>(end_ - pos_) >= n) return true;
  if (!status_.ok()) return false;
  size_t keep = static_cast<size_t>(end_ - pos_);
  std::memmove(buf_.get(), pos_, keep);
  base_offset_ += static_cast<uint64_t>(pos_ - buf_.get());
  pos_ = buf_.get();
  end_ = buf_.get() + keep;
  while (static_cast<size_t>(end_ - pos_) < n && !eof_) {
    absl::StatusOr<size_t> got = source_.Read(end_, capacity_ - static_cast<size_t>(end_ - pos_));
    if (!got.ok()) {
      status_ = got.status();
      return false;
    }
    if (*got == 0) eof_ = true;
    end_ += *got;
  }
  return static_cast<size_t>(end_ - pos_) >= n;
}

bool ProtoReader::AtEof() { return !Ensure(1) && status_.ok(); }

bool ProtoReader::More(uint64_t limit, const char* message) {
  if (!status_.ok()) return false;
  if (limit == kNoLimit) return !AtEof();
  uint64_t offset = Offset();
  if (offset < limit) return true;
  if (offset > limit) {
    return Fail(absl::StrCat("a field runs ", offset - limit, " bytes past the end of its ",
                             message, " (ends at byte ", limit, ")"));
  }
  return false;
}

bool ProtoReader::ReadTag(uint32_t* field, int* wire_type, const char* message) {
  uint64_t key;
  if (!ReadVarint(&key, message)) return false;
  uint64_t number = key >> 3;
  int type = static_cast<int>(key & 7);
  if (number == 0 || number > 0x1FFFFFFF) {
    return Fail(absl::StrCat("invalid field number ", number, " in ", message));
  }
  if (type != kVarint && type != kFixed64 && type != kLengthDelimited && type != kFixed32) {
    return Fail(
        absl::StrCat("unsupported wire type ", type, " for field ", number, " of ", message));
  }
  *field = static_cast<uint32_t>(number);
  *wire_type = type;
  return true;
}

bool ProtoReader::ReadVarint(uint64_t* value, const char* what) {
  if (end_ - pos_ >= 10) {
    const uint8_t* p = reinterpret_cast<const uint8_t*>(pos_);
    uint64_t result = 0;
    for (int i = 0; i < 10; ++i) {
      uint8_t byte = p[i];
      result |= static_cast<uint64_t>(byte & 0x7F) << (7 * i);
      if (byte < 0x80) {
        pos_ += i + 1;
        *value = result;
        return true;
      }
    }
    return Fail(absl::StrCat("varint longer than 10 bytes in ", what));
  }
  return ReadVarintSlow(value, what);
}

bool ProtoReader::ReadVarintSlow(uint64_t* value, const char* what) {
  uint64_t result = 0;
  for (int i = 0; i < 10; ++i) {
    if (!Ensure(1)) return status_.ok() ? FailEof(what) : false;
    uint8_t byte = static_cast<uint8_t>(*pos_++);
    result |= static_cast<uint64_t>(byte & 0x7F) << (7 * i);
    if (byte < 0x80) {
      *value = result;
      return true;
    }
  }
  return Fail(absl::StrCat("varint longer than 10 bytes in ", what));
}

bool ProtoReader::ReadLength(uint64_t limit, uint64_t* end, const char* what, const char* message) {
  uint64_t length;
  if (!ReadVarint(&length, what)) return false;
  uint64_t offset = Offset();
  if (limit != kNoLimit && (length > limit || offset > limit - length)) {
    return Fail(absl::StrCat(what, " of ", length, " bytes runs past the end of its ", message,
                             " (ends at byte ", limit, ")"));
  }
  if (limit == kNoLimit && length > kNoLimit - offset) {
    return Fail(absl::StrCat(what, " has an impossible length ", length));
  }
  *end = offset + length;
  return true;
}

bool ProtoReader::ReadBytes(uint64_t n, size_t cap, std::string* out, const char* what) {
  out->clear();
  uint64_t keep = std::min<uint64_t>(n, cap);
  while (out->size() < keep) {
    if (!Ensure(1)) {
      return status_.ok() ? FailEof(absl::StrCat(n - out->size(), " more bytes of ", what).c_str())
                          : false;
    }
    size_t take = static_cast<size_t>(std::min<uint64_t>(keep - out->size(), end_ - pos_));
    out->append(pos_, take);
    pos_ += take;
  }
  if (keep < n) TrimIncompleteUtf8Tail(out);  // a capped name never ends in half a character
  return Skip(n - keep, what);
}

bool ProtoReader::Skip(uint64_t n, const char* what) {
  while (n > 0) {
    if (pos_ == end_ && !Ensure(1)) {
      return status_.ok() ? FailEof(absl::StrCat(n, " more bytes of ", what).c_str()) : false;
    }
    uint64_t take = std::min<uint64_t>(n, static_cast<uint64_t>(end_ - pos_));
    pos_ += take;
    n -= take;
  }
  return true;
}

bool ProtoReader::SkipField(int wire_type, uint64_t limit, const char* what, const char* message) {
  switch (wire_type) {
    case kVarint: {
      uint64_t ignored;
      return ReadVarint(&ignored, what);
    }
    case kFixed64:
      return Skip(8, what);
    case kFixed32:
      return Skip(4, what);
    case kLengthDelimited: {
      uint64_t end;
      if (!ReadLength(limit, &end, what, message)) return false;
      return Skip(end - Offset(), what);
    }
    default:
      return Fail(absl::StrCat("unsupported wire type ", wire_type));
  }
}

}  // namespace fleetprof::analysis
