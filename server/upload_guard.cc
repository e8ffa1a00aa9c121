#include "server/upload_guard.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/server_busy.h"
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

absl::StatusOr<std::unique_ptr<UploadGuard::Admission>> UploadGuard::Admit(const std::string& peer,
                                                                           std::function<bool()> abort) {
  std::lock_guard lock(mu_);
  auto found = per_peer_.find(peer);
  const int from_peer = found == per_peer_.end() ? 0 : found->second;
  if (from_peer >= limits_.max_per_peer) {
    return absl::UnavailableError(absl::StrCat(kServerBusy, ": ", from_peer, " uploads from ",
                                               peer.empty() ? "this client" : peer,
                                               " are in progress, as many as --max_uploads_per_peer allows; "
                                               "retry later"));
  }
  if (running_ >= limits_.max_uploads) {
    return absl::UnavailableError(absl::StrCat(
        kServerBusy, ": ", running_, " uploads are in progress, as many as --max_concurrent_uploads "
        "allows; retry later"));
  }
  ++running_;
  ++per_peer_[peer];  // entries exist only while a peer has uploads: the map stays bounded
  std::unique_ptr<Admission> admission(new Admission(this, peer, std::move(abort)));
  admitted_.insert(admission.get());
  return admission;
}

UploadGuard::Admission::~Admission() {
  std::lock_guard lock(guard_->mu_);
  guard_->admitted_.erase(this);
  --guard_->running_;
  auto it = guard_->per_peer_.find(peer_);
  if (--it->second == 0) guard_->per_peer_.erase(it);
}

void UploadGuard::Admission::WaitingForClient() { waiting_since_ns_.store(SteadyNanos()); }

void UploadGuard::Admission::ClientSent() { waiting_since_ns_.store(0); }

void UploadGuard::WatchdogLoop() {
  const auto tick = std::clamp(limits_.idle_timeout / 4, std::chrono::milliseconds(10), std::chrono::milliseconds(1000));
  std::unique_lock lock(mu_);
  while (!stop_cv_.wait_for(lock, tick, [this] { return stopping_; })) {
    const int64_t now = SteadyNanos();
    const int64_t limit = std::chrono::duration_cast<std::chrono::nanoseconds>(limits_.idle_timeout).count();
    for (Admission* a : admitted_) {
      const int64_t since = a->waiting_since_ns_.load();
      if (since == 0 || now - since < limit || a->timed_out_.load()) continue;
      a->timed_out_.store(true);  // before abort_: the transport's answer reads it
      if (!a->abort_()) {  // under mu_: the admission cannot go away meanwhile
        a->timed_out_.store(false);  // the message came just now
        continue;
      }
      spdlog::warn("upload from {} sent nothing for {} ms: broken off (--upload_idle_timeout_s); it can resume",
                   a->peer_.empty() ? "a client" : a->peer_, limits_.idle_timeout.count());
    }
  }
}

}  // namespace fleetprof
