#include "rpc/chunk_producer.h"

#include <algorithm>
#include <exception>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/threads.h"

namespace fleetprof {

ChunkProducer::ChunkProducer(std::string path, int64_t offset, int64_t end, size_t chunk_bytes)
    : path_(std::move(path)), offset_(offset), end_(end), chunk_bytes_(std::max<size_t>(chunk_bytes, 1)), made_to_(offset) {
  file_.open(path_, std::ios::binary);
  if (!file_) {
    open_ = absl::NotFoundError(absl::StrCat("cannot open ", path_));
    return;
  }
  char head[2] = {0, 0};
  file_.read(head, 2);
  compressed_ = !(file_.gcount() == 2 && LooksGzipped(std::string_view(head, 2)));
  file_.clear();
  file_.seekg(offset_);
  // Without a thread the chunks are made as they are asked for: slower, never wrong.
  if (auto thread = StartThread(absl::StrCat("the reader of ", path_), [this] { Run(); }); thread.ok()) {
    thread_ = *std::move(thread);
  }
}

ChunkProducer::~ChunkProducer() {
  if (!thread_.joinable()) return;
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  thread_.join();
}

std::optional<ChunkProducer::Chunk> ChunkProducer::Make() {
  if (!open_.ok() || made_to_ >= end_) return std::nullopt;
  const auto want = static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(chunk_bytes_), end_ - made_to_));
  Chunk chunk;
  // A file that is gzip already is sent as its bytes: read straight into the message's body.
  std::string& into = compressed_ ? buffer_ : chunk.body;
  into.resize(want);
  file_.read(into.data(), static_cast<std::streamsize>(want));
  const std::streamsize got = file_.gcount();
  if (got <= 0) return std::nullopt;  // the file is shorter than it was: the server says how far it got
  into.resize(static_cast<size_t>(got));
  made_to_ += got;
  chunk.file_bytes = got;
  if (compressed_) chunk.body = deflater_.Member(buffer_);
  return chunk;
}

void ChunkProducer::Run() {
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      const auto room = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_ || ready_.size() < kAhead; };
      mu_.Await(absl::Condition(&room));
      if (stop_) return;
    }
    std::optional<Chunk> chunk;
    std::exception_ptr error;
    try {
      chunk = Make();
    } catch (...) {  // std::bad_alloc, for one: the sender's thread rethrows it, as it was before
      error = std::current_exception();
    }
    absl::MutexLock lock(&mu_);
    const bool last = !chunk.has_value();
    if (error) error_ = error;
    ready_.push_back(std::move(chunk));
    if (last) return;
  }
}

std::optional<ChunkProducer::Chunk> ChunkProducer::Next() {
  if (!thread_.joinable()) return Make();
  absl::MutexLock lock(&mu_);
  if (finished_) return std::nullopt;
  const auto any = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !ready_.empty(); };
  mu_.Await(absl::Condition(&any));
  std::optional<Chunk> chunk = std::move(ready_.front());
  ready_.pop_front();
  finished_ = !chunk.has_value();
  if (finished_ && error_) std::rethrow_exception(std::exchange(error_, nullptr));
  return chunk;
}

}  // namespace fleetprof
