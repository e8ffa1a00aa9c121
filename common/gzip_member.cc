#include "common/gzip_member.h"

#include <isa-l/igzip_lib.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>

#include "absl/strings/str_cat.h"

namespace fleetprof {
namespace {

constexpr int kLevel = 1;
constexpr size_t kLevelBufferBytes = ISAL_DEF_LVL1_DEFAULT;
// An inflated member grows the output by at most this much per step.
constexpr size_t kInflateStep = 1 << 20;

}  // namespace

bool LooksGzipped(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

std::string GzipMember(std::string_view plain) {
  // Room for the usual case in one step (JSON shrinks; incompressible bytes grow a little).
  std::string out(plain.size() / 2 + (64 << 10), '\0');
  auto stream = std::make_unique<isal_zstream>();
  auto level_buffer = std::make_unique<uint8_t[]>(kLevelBufferBytes);
  isal_deflate_init(stream.get());
  stream->level = kLevel;
  stream->level_buf = level_buffer.get();
  stream->level_buf_size = kLevelBufferBytes;
  stream->gzip_flag = IGZIP_GZIP;
  stream->flush = NO_FLUSH;
  // ISA-L takes 32-bit lengths: the input goes in slices, the last one marked as the end.
  constexpr size_t kSlice = size_t{1} << 30;
  size_t fed = 0;
  auto feed = [&] {
    const size_t n = std::min(kSlice, plain.size() - fed);
    stream->next_in = reinterpret_cast<uint8_t*>(const_cast<char*>(plain.data() + fed));
    stream->avail_in = static_cast<uint32_t>(n);
    fed += n;
    stream->end_of_stream = fed == plain.size() ? 1 : 0;
  };
  feed();
  size_t written = 0;
  while (stream->internal_state.state != ZSTATE_END) {
    if (stream->avail_in == 0 && fed < plain.size()) feed();
    if (written == out.size()) out.resize(out.size() * 2);
    stream->next_out = reinterpret_cast<uint8_t*>(out.data() + written);
    stream->avail_out = static_cast<uint32_t>(out.size() - written);
    // Errors come only from bad parameters, which are fixed here: one is a bug to stop at.
    if (isal_deflate(stream.get()) != COMP_OK) std::abort();
    written = out.size() - stream->avail_out;
  }
  out.resize(written);
  return out;
}

absl::Status GunzipMember(std::string_view member, size_t max_plain_bytes, std::string* plain) {
  plain->clear();
  if (!LooksGzipped(member)) return absl::InvalidArgumentError("not a gzip member (no gzip magic bytes)");
  // ISA-L takes 32-bit lengths; no chunk comes near (the server's is 1 MiB).
  if (member.size() > UINT32_MAX || max_plain_bytes >= UINT32_MAX) {
    return absl::InvalidArgumentError("a gzip member or its content over 4 GiB");
  }
  auto state = std::make_unique<inflate_state>();
  isal_inflate_init(state.get());
  state->crc_flag = ISAL_GZIP;
  state->next_in = reinterpret_cast<uint8_t*>(const_cast<char*>(member.data()));
  state->avail_in = static_cast<uint32_t>(member.size());
  // The trailer's ISIZE (the content's length mod 2^32) sizes the output once; it is only a
  // hint: ISA-L checks it at the end, and a member that claims less still grows step by step.
  if (member.size() >= 18) {
    const auto* tail = reinterpret_cast<const unsigned char*>(member.data() + member.size() - 4);
    const size_t claimed = tail[0] | (tail[1] << 8) | (tail[2] << 16) | (size_t{tail[3]} << 24);
    plain->reserve(std::min(claimed, max_plain_bytes) + 1);
  }
  for (;;) {
    const size_t have = plain->size();
    if (have >= max_plain_bytes + 1) {
      plain->clear();
      return absl::ResourceExhaustedError(
          absl::StrCat("a gzip member inflates to more than ", max_plain_bytes, " bytes"));
    }
    // One byte past the cap tells "exactly the cap" from "more"; the reserved room first.
    const size_t room = plain->capacity() > have ? plain->capacity() - have : kInflateStep;
    plain->resize(have + std::min(room, max_plain_bytes + 1 - have));
    state->next_out = reinterpret_cast<uint8_t*>(plain->data() + have);
    state->avail_out = static_cast<uint32_t>(plain->size() - have);
    const int ret = isal_inflate(state.get());
    plain->resize(plain->size() - state->avail_out);
    if (ret != ISAL_DECOMP_OK) {
      plain->clear();
      return absl::InvalidArgumentError(absl::StrCat("a damaged gzip member (ISA-L error ", ret, ")"));
    }
    if (state->block_state == ISAL_BLOCK_FINISH) break;
    if (state->avail_in == 0 && state->avail_out > 0) {
      plain->clear();
      return absl::InvalidArgumentError("a gzip member cut short");
    }
  }
  if (plain->size() > max_plain_bytes) {
    plain->clear();
    return absl::ResourceExhaustedError(absl::StrCat("a gzip member inflates to more than ", max_plain_bytes, " bytes"));
  }
  if (state->avail_in != 0) {
    plain->clear();
    return absl::InvalidArgumentError("bytes after the end of a gzip member");
  }
  return absl::OkStatus();
}

}  // namespace fleetprof
