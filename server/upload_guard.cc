#include "server/upload_guard.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace fleetprof {
namespace {

int64_t SteadyNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

UploadGuard::UploadGuard(Limits limits) : limits_(limits) {
  watchdog_ = std::thread([this] { WatchdogLoop(); });
}

UploadGuard::~UploadGuard() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  watchdog_.join();
}

absl::StatusOr<std::unique_ptr<UploadGuard::Admission>> UploadGuard::Admit(const std::string& peer) {
  std::lock_guard lock(mu_);
  auto found = per_peer_.find(peer);
  const int from_peer = found == per_peer_.end() ? 0 : found->second;
  if (from_peer >= limits_.max_per_peer) {
    return absl::UnavailableError(absl::StrCat("the server is busy: ", from_peer, " uploads from ",
                                               peer.empty() ? "this client" : peer,
                                               " are in progress, as many as --max_uploads_per_peer allows; "
                                               "retry later"));
  }
  if (running_ >= limits_.max_uploads) {
    return absl::UnavailableError(absl::StrCat(
        "the server is busy: ", running_, " uploads are in progress, as many as --max_concurrent_uploads "
        "allows; retry later"));
  }
  ++running_;
  ++per_peer_[peer];  // entries exist only while a peer has uploads: the map stays bounded
  return std::unique_ptr<Admission>(new Admission(this, peer));
}

UploadGuard::Admission::~Admission() {
  std::lock_guard lock(guard_->mu_);
  --guard_->running_;
  auto it = guard_->per_peer_.find(peer_);
  if (--it->second == 0) guard_->per_peer_.erase(it);
}

std::unique_ptr<UploadGuard::WatchedStream> UploadGuard::Watch(UploadStream* stream) {
  std::unique_ptr<WatchedStream> watched(new WatchedStream(this, stream));
  std::lock_guard lock(mu_);
  watched_.insert(watched.get());
  return watched;
}

UploadGuard::WatchedStream::~WatchedStream() {
  std::lock_guard lock(guard_->mu_);
  guard_->watched_.erase(this);
}

bool UploadGuard::WatchedStream::Read(v1::UploadRequest* message) {
  reading_since_ns_.store(SteadyNanos());
  const bool ok = inner_->Read(message);
  reading_since_ns_.store(0);
  return ok && !timed_out_.load();
}

void UploadGuard::WatchdogLoop() {
  const auto tick = std::clamp(limits_.idle_timeout / 4, std::chrono::milliseconds(10), std::chrono::milliseconds(1000));
  std::unique_lock lock(mu_);
  while (!stop_cv_.wait_for(lock, tick, [this] { return stopping_; })) {
    const int64_t now = SteadyNanos();
    const int64_t limit = std::chrono::duration_cast<std::chrono::nanoseconds>(limits_.idle_timeout).count();
    for (WatchedStream* s : watched_) {
      const int64_t since = s->reading_since_ns_.load();
      if (since == 0 || now - since < limit || s->timed_out_.load()) continue;
      s->timed_out_.store(true);
      spdlog::warn("upload from {} sent nothing for {} ms: broken off (--upload_idle_timeout_s); it can resume",
                   s->Peer().empty() ? "a client" : s->Peer(), limits_.idle_timeout.count());
      s->Abort();  // under mu_: the stream cannot go away meanwhile
    }
  }
}

}  // namespace fleetprof
