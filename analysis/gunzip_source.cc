#include "analysis/gunzip_source.h"

#include <isa-l/igzip_lib.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/gzip_member.h"
#include "common/threads.h"

namespace fleetprof::analysis {
namespace {

const char* IsalErrorText(int ret) {
  switch (ret) {
    case ISAL_INVALID_BLOCK:
      return "invalid deflate block";
    case ISAL_INVALID_SYMBOL:
      return "invalid deflate symbol";
    case ISAL_INVALID_LOOKBACK:
      return "invalid back-reference distance";
    case ISAL_INVALID_WRAPPER:
      return "invalid gzip header";
    case ISAL_UNSUPPORTED_METHOD:
      return "unsupported compression method";
    case ISAL_INCORRECT_CHECKSUM:
      return "CRC-32 mismatch";
    case ISAL_NEED_DICT:
      return "preset dictionary required";
    default:
      return "inflate error";
  }
}

// What follows the end of a gzip member, judged from the next compressed byte.
enum class AfterMember {
  kReadMore,        // no byte left to judge by, and the input goes on
  kEndOfStream,     // nothing follows
  kSkippedPadding,  // a zero byte, consumed
  kNextMember,      // another member's magic: ISA-L is reset for it
  kTrailingData,    // anything else, or a member after the padding
};

// The compressed side of the inflate loop: ISA-L's state, the input buffer it reads, and how
// many compressed bytes it was handed, which the offsets in errors count.
class CompressedInput {
 public:
  // Starts with `prefix`, the bytes already read from the source.
  CompressedInput(const std::string& prefix, size_t buffer_bytes)
      : state_(std::make_unique<inflate_state>()),
        in_(std::make_unique<unsigned char[]>(buffer_bytes)),
        buffer_bytes_(buffer_bytes) {
    isal_inflate_init(state_.get());
    state_->crc_flag = ISAL_GZIP;
    std::memcpy(in_.get(), prefix.data(), prefix.size());
    state_->next_in = in_.get();
    state_->avail_in = static_cast<uint32_t>(prefix.size());
    read_total_ = prefix.size();
  }

  // ISA-L took all it was given and the source has more.
  bool NeedsInput() const { return state_->avail_in == 0 && !eof_; }

  // Reads the next buffer from `source`; at its end, notes that it ended.
  absl::Status Refill(ByteSource& source) {
    absl::StatusOr<size_t> got = source.Read(reinterpret_cast<char*>(in_.get()), buffer_bytes_);
    if (!got.ok()) return got.status();
    if (*got == 0) {
      eof_ = true;
    } else {
      state_->next_in = in_.get();
      state_->avail_in = static_cast<uint32_t>(*got);
      read_total_ += *got;
    }
    return absl::OkStatus();
  }

  // Tar/tape zero padding after the last member is tolerated; anything else is not.
  AfterMember NextAfterMember() {
    if (state_->avail_in == 0) return eof_ ? AfterMember::kEndOfStream : AfterMember::kReadMore;
    const unsigned char next = *state_->next_in;
    if (next == 0) {
      zero_padding_ = true;
      ++state_->next_in;
      --state_->avail_in;
      return AfterMember::kSkippedPadding;
    }
    if (zero_padding_ || next != 0x1f) return AfterMember::kTrailingData;
    isal_inflate_reset(state_.get());
    state_->crc_flag = ISAL_GZIP;
    return AfterMember::kNextMember;
  }

  // Inflates into out[*out_len, out_bytes), moving *out_len past what was written; ISA-L's
  // return code.
  int InflateInto(char* out, size_t* out_len, size_t out_bytes) {
    state_->next_out = reinterpret_cast<uint8_t*>(out + *out_len);
    state_->avail_out = static_cast<uint32_t>(out_bytes - *out_len);
    const int ret = isal_inflate(state_.get());
    *out_len = out_bytes - state_->avail_out;
    return ret;
  }

  bool MemberFinished() const { return state_->block_state == ISAL_BLOCK_FINISH; }
  // ISA-L had room to write and nothing more to read, yet the member is unfinished.
  bool Truncated() const { return state_->avail_in == 0 && eof_ && state_->avail_out > 0; }

  uint64_t consumed() const { return read_total_ - state_->avail_in; }
  uint64_t read_total() const { return read_total_; }

 private:
  std::unique_ptr<inflate_state> state_;
  std::unique_ptr<unsigned char[]> in_;
  size_t buffer_bytes_;
  uint64_t read_total_ = 0;  // compressed bytes handed to ISA-L so far
  bool eof_ = false;
  bool zero_padding_ = false;
};

// Inflates on the caller's thread, straight into its buffer: a reopened source (a file's far
// part, kineto_json_reader.h) already has a thread of its own, and a third and fourth thread on
// two cores cost more in waits for a time slice than the pipeline saves.
class InlineGunzipSource : public ByteSource {
 public:
  InlineGunzipSource(std::unique_ptr<ByteSource> inner, const std::string& prefix)
      : inner_(std::move(inner)), name_(inner_->name()), input_(prefix, kInBufferBytes) {}

  absl::StatusOr<size_t> Read(char* buf, size_t n) override {
    if (!sticky_error_.ok()) return sticky_error_;
    size_t out_len = 0;
    const size_t room = std::min<size_t>(n, size_t{1} << 30);
    while (out_len == 0 && !ended_ && room > 0) {
      if (absl::Status s = Step(buf, &out_len, room); !s.ok()) {
        sticky_error_ = s;
        if (out_len == 0) return s;  // else the bytes before it first, the error next
      }
      if (!sticky_error_.ok()) break;
    }
    return out_len;
  }

  absl::StatusOr<uint64_t> Skip(uint64_t n) override {
    if (scratch_ == nullptr) scratch_ = std::make_unique<char[]>(kScratchBytes);
    uint64_t skipped = 0;
    while (skipped < n) {
      absl::StatusOr<size_t> got = Read(scratch_.get(), std::min<uint64_t>(kScratchBytes, n - skipped));
      if (!got.ok()) return got.status();
      if (*got == 0) break;
      skipped += *got;
    }
    return skipped;
  }

  const std::string& name() const override { return name_; }

 private:
  static constexpr size_t kInBufferBytes = 64 << 10;
  static constexpr size_t kScratchBytes = 64 << 10;

  // One turn of GunzipSource::Inflate's loop, writing into out[*out_len, room).
  absl::Status Step(char* out, size_t* out_len, size_t room) {
    if (input_.NeedsInput()) {
      if (absl::Status s = input_.Refill(*inner_); !s.ok()) return s;
    }
    if (member_done_) {
      switch (input_.NextAfterMember()) {
        case AfterMember::kReadMore:
        case AfterMember::kSkippedPadding:
          return absl::OkStatus();
        case AfterMember::kEndOfStream:
          ended_ = true;
          return absl::OkStatus();
        case AfterMember::kTrailingData:
          return absl::DataLossError(absl::StrCat(
              name_, ": trailing data after gzip stream at compressed byte ", input_.consumed()));
        case AfterMember::kNextMember:
          member_done_ = false;
          break;
      }
    }
    const int ret = input_.InflateInto(out, out_len, room);
    if (ret < 0 || ret == ISAL_NEED_DICT) {
      return absl::DataLossError(absl::StrCat(name_, ": corrupt gzip stream at compressed byte ",
                                              input_.consumed(), ": ", IsalErrorText(ret)));
    }
    if (input_.MemberFinished()) {
      member_done_ = true;
    } else if (input_.Truncated()) {
      return absl::DataLossError(
          absl::StrCat(name_, ": truncated gzip stream at compressed byte ", input_.read_total()));
    }
    return absl::OkStatus();
  }

  std::unique_ptr<ByteSource> inner_;
  std::string name_;
  CompressedInput input_;
  bool member_done_ = false;
  bool ended_ = false;
  absl::Status sticky_error_;
  std::unique_ptr<char[]> scratch_;
};

// Defers the sniffing to the first Read, because MaybeGunzip cannot return a Status.
class SniffingSource : public ByteSource {
 public:
  // `inline_gunzip`: a reopened source, which inflates on its reader's thread.
  SniffingSource(std::unique_ptr<ByteSource> inner, bool inline_gunzip)
      : inner_(std::move(inner)), raw_(inner_.get()), name_(inner_->name()), inline_gunzip_(inline_gunzip) {}

  absl::StatusOr<size_t> Read(char* buf, size_t n) override {
    if (absl::Status s = Resolve(); !s.ok()) return s;
    return resolved_->Read(buf, n);
  }
  absl::StatusOr<uint64_t> Skip(uint64_t n) override {
    if (absl::Status s = Resolve(); !s.ok()) return s;
    return resolved_->Skip(n);
  }
  const std::string& name() const override { return name_; }

  bool SkipReadsThrough() const override { return gzipped_; }
  void StopReading() override {
    if (resolved_ != nullptr) resolved_->StopReading();
  }
  // raw_ is owned by resolved_ once resolved, and its Reopen may run beside a read.
  std::unique_ptr<ByteSource> Reopen() const override {
    std::unique_ptr<ByteSource> again = raw_->Reopen();
    if (again == nullptr) return nullptr;
    return std::make_unique<SniffingSource>(std::move(again), /*inline_gunzip=*/true);
  }

  // Plain: the inner size. Gzip: the length the last member records (ISIZE, modulo 2^32), read
  // from a reopened source; wrong for several members, which only makes a split uneven.
  int64_t SizeHint() const override {
    const int64_t size = raw_->SizeHint();
    if (!gzipped_) return resolved_ != nullptr ? size : -1;
    if (size < 18) return -1;
    std::unique_ptr<ByteSource> again = raw_->Reopen();
    if (again == nullptr) return -1;
    absl::StatusOr<uint64_t> skipped = again->Skip(static_cast<uint64_t>(size - 4));
    if (!skipped.ok() || *skipped != static_cast<uint64_t>(size - 4)) return -1;
    unsigned char tail[4];
    size_t filled = 0;
    while (filled < 4) {
      absl::StatusOr<size_t> got = again->Read(reinterpret_cast<char*>(tail) + filled, 4 - filled);
      if (!got.ok() || *got == 0) return -1;
      filled += *got;
    }
    return static_cast<int64_t>(tail[0] | tail[1] << 8 | tail[2] << 16 | static_cast<uint32_t>(tail[3]) << 24);
  }

 private:
  absl::Status Resolve() {
    if (resolved_ != nullptr) return absl::OkStatus();
    std::string prefix;
    char head[2];
    while (prefix.size() < 2) {
      absl::StatusOr<size_t> got = inner_->Read(head, 2 - prefix.size());
      if (!got.ok()) return got.status();
      if (*got == 0) break;
      prefix.append(head, *got);
    }
    if (LooksGzipped(prefix)) {
      gzipped_ = true;
      if (inline_gunzip_) {
        resolved_ = std::make_unique<InlineGunzipSource>(std::move(inner_), prefix);
      } else {
        resolved_ = std::make_unique<GunzipSource>(std::move(inner_), std::move(prefix));
      }
    } else {
      resolved_ = PrefixedSource(std::move(prefix), std::move(inner_));
    }
    return absl::OkStatus();
  }

  std::unique_ptr<ByteSource> inner_;
  ByteSource* raw_;
  std::string name_;
  bool inline_gunzip_;
  bool gzipped_ = false;
  std::unique_ptr<ByteSource> resolved_;
};

}  // namespace

std::unique_ptr<ByteSource> MaybeGunzip(std::unique_ptr<ByteSource> inner) {
  return std::make_unique<SniffingSource>(std::move(inner), /*inline_gunzip=*/false);
}

GunzipSource::GunzipSource(std::unique_ptr<ByteSource> inner, std::string prefix)
    : inner_(std::move(inner)), name_(inner_->name()), prefix_(std::move(prefix)) {
  for (int i = 0; i < kOutBuffers; ++i) {
    out_buffers_.push_back(std::make_unique<char[]>(kOutBufferBytes));
    free_.push_back(out_buffers_.back().get());
  }
  auto worker = StartThread(absl::StrCat("the inflate thread of ", name_), [this] { RunInflate(); });
  if (!worker.ok()) {
    finished_ = true;
    end_status_ = worker.status();  // UNAVAILABLE: a retry may find a thread
    return;
  }
  worker_ = *std::move(worker);
}

GunzipSource::~GunzipSource() { StopReading(); }

void GunzipSource::StopReading() {
  {
    absl::MutexLock lock(&mu_);
    cancelled_ = true;
  }
  stop_.store(true, std::memory_order_relaxed);
  if (worker_.joinable()) worker_.join();
  // The worker is gone: nothing refers to the buffers any more.
  absl::MutexLock lock(&mu_);
  ready_.clear();
  free_.clear();
  current_ = Chunk{};
  current_pos_ = 0;
  done_ = true;
  if (sticky_error_.ok()) sticky_error_ = absl::CancelledError(absl::StrCat(name_, ": no longer read"));
  out_buffers_.clear();
}

absl::StatusOr<bool> GunzipSource::NextChunk() {
  if (!sticky_error_.ok()) return sticky_error_;
  while (current_pos_ == current_.size) {
    if (done_) return false;
    absl::MutexLock lock(&mu_);
    if (current_.data != nullptr) {
      free_.push_back(current_.data);
      current_ = Chunk{};
      current_pos_ = 0;
    }
    const auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !ready_.empty() || finished_; };
    mu_.Await(absl::Condition(&ready));
    if (!ready_.empty()) {
      current_ = ready_.front();
      ready_.pop_front();
      continue;
    }
    done_ = true;
    if (!end_status_.ok()) {
      sticky_error_ = end_status_;
      return sticky_error_;
    }
    return false;
  }
  return true;
}

absl::StatusOr<size_t> GunzipSource::Read(char* buf, size_t n) {
  absl::StatusOr<bool> more = NextChunk();
  if (!more.ok()) return more.status();
  if (!*more) return 0;
  size_t take = std::min(n, current_.size - current_pos_);
  std::memcpy(buf, current_.data + current_pos_, take);
  current_pos_ += take;
  return take;
}

// As Read, without copying what is skipped.
absl::StatusOr<uint64_t> GunzipSource::Skip(uint64_t n) {
  uint64_t skipped = 0;
  while (skipped < n) {
    absl::StatusOr<bool> more = NextChunk();
    if (!more.ok()) return more.status();
    if (!*more) break;
    const uint64_t take = std::min<uint64_t>(n - skipped, current_.size - current_pos_);
    current_pos_ += take;
    skipped += take;
  }
  return skipped;
}

char* GunzipSource::AcquireFree() {
  absl::MutexLock lock(&mu_);
  const auto free = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !free_.empty() || cancelled_; };
  mu_.Await(absl::Condition(&free));
  if (cancelled_) return nullptr;
  char* buffer = free_.back();
  free_.pop_back();
  return buffer;
}

void GunzipSource::Publish(Chunk chunk) {
  {
    absl::MutexLock lock(&mu_);
    ready_.push_back(chunk);
  }
}

void GunzipSource::PublishEnd(absl::Status status) {
  {
    absl::MutexLock lock(&mu_);
    finished_ = true;
    end_status_ = std::move(status);
  }
}

void GunzipSource::RunInflate() { PublishEnd(Inflate()); }

// Inflates every gzip member of inner_ in turn. Offsets in errors count compressed bytes
// from the start of the file, the only position a user can check with other tools.
absl::Status GunzipSource::Inflate() {
  CompressedInput input(prefix_, kInBufferBytes);
  bool member_done = false;
  char* out = nullptr;
  size_t out_len = 0;
  auto flush = [&] {
    if (out != nullptr && out_len > 0) {
      Publish(Chunk{out, out_len});
      out = nullptr;
    }
  };

  for (;;) {
    if (out == nullptr) {
      out = AcquireFree();
      if (out == nullptr) return absl::CancelledError("reader closed");
      out_len = 0;
    }
    if (input.NeedsInput()) {
      // A reader that went away must not keep us reading an upload to its end.
      if (stop_.load(std::memory_order_relaxed)) return absl::CancelledError("reader closed");
      if (absl::Status s = input.Refill(*inner_); !s.ok()) {
        flush();
        return s;
      }
    }
    if (member_done) {
      switch (input.NextAfterMember()) {
        case AfterMember::kReadMore:
        case AfterMember::kSkippedPadding:
          continue;
        case AfterMember::kEndOfStream:
          flush();
          return absl::OkStatus();
        case AfterMember::kTrailingData:
          flush();
          return absl::DataLossError(absl::StrCat(
              name_, ": trailing data after gzip stream at compressed byte ", input.consumed()));
        case AfterMember::kNextMember:
          member_done = false;
          break;
      }
    }
    const int ret = input.InflateInto(out, &out_len, kOutBufferBytes);
    if (ret < 0 || ret == ISAL_NEED_DICT) {
      flush();
      return absl::DataLossError(absl::StrCat(name_, ": corrupt gzip stream at compressed byte ",
                                              input.consumed(), ": ", IsalErrorText(ret)));
    }
    if (input.MemberFinished()) {
      member_done = true;
    } else if (input.Truncated()) {
      flush();
      return absl::DataLossError(
          absl::StrCat(name_, ": truncated gzip stream at compressed byte ", input.read_total()));
    }
    if (out_len == kOutBufferBytes) flush();
  }
}

}  // namespace fleetprof::analysis
