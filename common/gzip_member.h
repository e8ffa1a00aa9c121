#pragma once
// One gzip member (RFC 1952) of a run of bytes, made and checked with ISA-L. Uploads travel and
// are stored as such members, one per chunk: a series of them is itself a valid .gz file, and
// each can be checked and sized on its own as it arrives.

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace fleetprof {

// Whether `bytes` start like a gzip stream (its two magic bytes): such a file is sent and kept
// as it is, since compressing it again gains nothing.
bool LooksGzipped(std::string_view bytes);

// `plain` as one gzip member at ISA-L's level 1 (about 1 GB/s; JSON traces shrink about 9×).
// Never longer than GzipMemberBound(plain.size()).
std::string GzipMember(std::string_view plain);

// Makes members like GzipMember, one after another, keeping ISA-L's state, its level buffer
// and the output buffer between them: GzipMember allocates and zeroes some 700 KB for each,
// which for an upload's 1 MiB chunks was a tenth of the sender's CPU. Not thread-safe.
class GzipDeflater {
 public:
  GzipDeflater();
  ~GzipDeflater();
  GzipDeflater(const GzipDeflater&) = delete;
  GzipDeflater& operator=(const GzipDeflater&) = delete;

  std::string Member(std::string_view plain);

 private:
  struct State;
  std::unique_ptr<State> state_;
  std::string out_;
};
// The most a member of `plain_bytes` bytes takes when GzipMember makes it: incompressible bytes
// grow by deflate's block headers, and the gzip header and trailer come on top. A server sizes
// its chunk limit for gzip chunks with it, and keeps a client's member only within it.
// (ISA-L adds 5 bytes per 64 KiB block and 18 of header and trailer: 1 MiB of random bytes
// took 103 more.)
constexpr size_t GzipMemberBound(size_t plain_bytes) { return plain_bytes + plain_bytes / 4096 + 64; }

// Replaces `*plain` with the content of `member`, which must be exactly one whole, intact gzip
// member (CRC-32 and length checked) and nothing after it. INVALID_ARGUMENT names what is wrong
// with it; RESOURCE_EXHAUSTED when its content exceeds `max_plain_bytes` (inflation stops there,
// so a small member cannot make the caller hold more). Says nothing of the member's own size:
// its header may carry a name or comment of any length (see GzipMemberBound). A `*plain` that
// held an earlier member is written over in place: a caller inflating member after member into
// the same buffers allocates and zeroes only where a member is longer than the buffer.
absl::Status GunzipMember(std::string_view member, size_t max_plain_bytes, std::string* plain);

}  // namespace fleetprof
