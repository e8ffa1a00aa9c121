#include "server/ingest/upload_guard.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/server_busy.h"
#include "spdlog/spdlog.h"

namespace fleetprof {
UploadGuard::UploadGuard(Limits limits, Clock* clock) : limits_(limits), clock_(clock) {
  watchdog_ = PeriodicLoop::StartOrLog(
      "the upload watchdog", clock_, [this](int64_t now) { return BreakOffIdle(now); },
      "stalled uploads will not be broken off");
}

UploadGuard::~UploadGuard() { watchdog_.reset(); }

absl::StatusOr<std::unique_ptr<UploadGuard::Admission>> UploadGuard::Admit(const std::string& peer,
                                                                           std::function<bool()> abort) {
  absl::MutexLock lock(&mu_);
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
  absl::MutexLock lock(&guard_->mu_);
  guard_->admitted_.erase(this);
  --guard_->running_;
  auto it = guard_->per_peer_.find(peer_);
  if (--it->second == 0) guard_->per_peer_.erase(it);
}

void UploadGuard::Admission::WaitingForClient() { waiting_since_ns_.store(guard_->clock_->MonotonicNanos()); }

void UploadGuard::Admission::ClientSent() { waiting_since_ns_.store(0); }

int64_t UploadGuard::BreakOffIdle(int64_t now) {
  const auto tick = std::clamp(limits_.idle_timeout / 4, std::chrono::milliseconds(10), std::chrono::milliseconds(1000));
  const int64_t since_start = clock_->MonotonicNanos();
  const int64_t limit = std::chrono::duration_cast<std::chrono::nanoseconds>(limits_.idle_timeout).count();
  absl::MutexLock lock(&mu_);
  for (Admission* a : admitted_) {
    const int64_t since = a->waiting_since_ns_.load();
    if (since == 0 || since_start - since < limit || a->timed_out_.load()) continue;
    a->timed_out_.store(true);  // before abort_: the transport's answer reads it
    // Under mu_: the admission cannot go away meanwhile. abort_ only hands the break-off to
    // the upload's worker; it waits for nothing.
    if (!a->abort_()) {
      a->timed_out_.store(false);  // the message came just now
      continue;
    }
    spdlog::warn("upload from {} sent nothing for {} ms: broken off (--upload_idle_timeout_s); it can resume",
                 a->peer_.empty() ? "a client" : a->peer_, limits_.idle_timeout.count());
  }
  return now + std::chrono::duration_cast<std::chrono::nanoseconds>(tick).count();
}

}  // namespace fleetprof
