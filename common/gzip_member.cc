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

struct GzipDeflater::State {
  isal_zstream stream;
  alignas(64) uint8_t level_buffer[kLevelBufferBytes];
};

GzipDeflater::GzipDeflater() : state_(std::make_unique<State>()) {}
GzipDeflater::~GzipDeflater() = default;

std::string GzipDeflater::Member(std::string_view plain) {
  // Room for the usual case in one step (JSON shrinks; incompressible bytes grow a little),
  // kept from member to member.
  if (out_.size() < plain.size() / 2 + (64 << 10)) out_.resize(plain.size() / 2 + (64 << 10));
  isal_zstream* stream = &state_->stream;
  isal_deflate_init(stream);
  stream->level = kLevel;
  stream->level_buf = state_->level_buffer;
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
    if (written == out_.size()) out_.resize(out_.size() * 2);
    stream->next_out = reinterpret_cast<uint8_t*>(out_.data() + written);
    stream->avail_out = static_cast<uint32_t>(std::min<size_t>(out_.size() - written, UINT32_MAX));
    // Errors come only from bad parameters, which are fixed here: one is a bug to stop at.
    if (isal_deflate(stream) != COMP_OK) std::abort();
    written = static_cast<size_t>(reinterpret_cast<char*>(stream->next_out) - out_.data());
  }
  return std::string(out_.data(), written);
}

std::string GzipMember(std::string_view plain) { return GzipDeflater().Member(plain); }

absl::Status GunzipMember(std::string_view member, size_t max_plain_bytes, std::string* plain) {
  // `*plain` is written over from its start: a buffer used before costs no zeroing up to its
  // length. On every error it is left empty.
  const auto fail = [plain](absl::Status error) {
    plain->clear();
    return error;
  };
  if (!LooksGzipped(member)) return fail(absl::InvalidArgumentError("not a gzip member (no gzip magic bytes)"));
  // ISA-L takes 32-bit lengths; no chunk comes near (the server's is 1 MiB).
  if (member.size() > UINT32_MAX || max_plain_bytes >= UINT32_MAX) {
    return fail(absl::InvalidArgumentError("a gzip member or its content over 4 GiB"));
  }
  const auto too_large = [&] {
    return fail(absl::ResourceExhaustedError(absl::StrCat("a gzip member inflates to more than ", max_plain_bytes, " bytes")));
  };
  auto state = std::make_unique<inflate_state>();
  isal_inflate_init(state.get());
  state->crc_flag = ISAL_GZIP;
  state->next_in = reinterpret_cast<uint8_t*>(const_cast<char*>(member.data()));
  state->avail_in = static_cast<uint32_t>(member.size());
  // One byte past the cap tells "exactly the cap" from "more".
  const size_t limit = max_plain_bytes + 1;
  // The trailer's ISIZE (the content's length mod 2^32) sizes the output once; it is only a
  // hint: ISA-L checks it at the end, and a member that claims less still grows step by step.
  if (member.size() >= 18) {
    const auto* tail = reinterpret_cast<const unsigned char*>(member.data() + member.size() - 4);
    const size_t claimed = tail[0] | (tail[1] << 8) | (tail[2] << 16) | (size_t{tail[3]} << 24);
    if (plain->size() < std::min(claimed, max_plain_bytes) + 1) plain->resize(std::min(claimed, max_plain_bytes) + 1);
  }
  size_t written = 0;
  for (;;) {
    if (written >= limit) return too_large();
    if (written == plain->size()) plain->resize(std::min(written + kInflateStep, limit));
    const size_t room = std::min(plain->size(), limit) - written;
    state->next_out = reinterpret_cast<uint8_t*>(plain->data() + written);
    state->avail_out = static_cast<uint32_t>(room);
    const int ret = isal_inflate(state.get());
    written += room - state->avail_out;
    if (ret != ISAL_DECOMP_OK) {
      return fail(absl::InvalidArgumentError(absl::StrCat("a damaged gzip member (ISA-L error ", ret, ")")));
    }
    if (state->block_state == ISAL_BLOCK_FINISH) break;
    if (state->avail_in == 0 && state->avail_out > 0) return fail(absl::InvalidArgumentError("a gzip member cut short"));
  }
  if (written > max_plain_bytes) return too_large();
  if (state->avail_in != 0) return fail(absl::InvalidArgumentError("bytes after the end of a gzip member"));
  plain->resize(written);
  return absl::OkStatus();
}

}  // namespace fleetprof
