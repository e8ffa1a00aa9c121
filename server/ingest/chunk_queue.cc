#include "server/ingest/chunk_queue.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace fleetprof {

ChunkQueue::ChunkQueue(std::string name, size_t capacity_bytes)
    : name_(std::move(name)), capacity_(capacity_bytes) {}

bool ChunkQueue::Push(std::string chunk) {
  absl::MutexLock lock(&mu_);
  if (chunk.empty()) return !reading_stopped_;  // Read() returning 0 would mean end of stream
  const auto room = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return reading_stopped_ || queued_bytes_ < capacity_; };
  mu_.Await(absl::Condition(&room));  // (absl re-checks it whenever mu_ is released)
  if (reading_stopped_) return false;
  // What the chunk holds, not its length: a reused buffer may be longer than its bytes.
  queued_bytes_ += chunk.capacity();
  chunks_.push_back(std::move(chunk));
  return true;
}

void ChunkQueue::CloseWriting() {
  absl::MutexLock lock(&mu_);
  writing_closed_ = true;
}

void ChunkQueue::Fail(absl::Status status) {
  absl::MutexLock lock(&mu_);
  failure_ = std::move(status);
  writing_closed_ = true;
}

void ChunkQueue::StopReading() {
  absl::MutexLock lock(&mu_);
  reading_stopped_ = true;
  chunks_.clear();
  spare_ = std::string();
  queued_bytes_ = 0;
}

absl::StatusOr<size_t> ChunkQueue::Read(char* buf, size_t n) {
  absl::MutexLock lock(&mu_);
  const auto readable = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !chunks_.empty() || writing_closed_; };
  mu_.Await(absl::Condition(&readable));
  if (!failure_.ok()) return failure_;
  if (chunks_.empty()) {
    spare_ = std::string();  // the end: no chunk will need it
    return 0;
  }
  std::string& front = chunks_.front();
  size_t take = std::min(n, front.size() - front_pos_);
  std::memcpy(buf, front.data() + front_pos_, take);
  front_pos_ += take;
  if (front_pos_ == front.size()) {
    queued_bytes_ -= front.capacity();
    spare_ = std::move(front);
    chunks_.pop_front();
    front_pos_ = 0;
  }
  return take;
}

std::string ChunkQueue::TakeSpare() {
  absl::MutexLock lock(&mu_);
  return std::exchange(spare_, std::string());
}

absl::StatusOr<size_t> ConcatSource::Read(char* buf, size_t n) {
  if (first_) {
    auto got = first_->Read(buf, n);
    if (!got.ok() || *got > 0) return got;
    first_.reset();
  }
  return second_->Read(buf, n);
}

}  // namespace fleetprof
