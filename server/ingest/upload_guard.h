#pragma once
// Bounds what uploads can hold on the server: how many run at once, in all and per peer (each
// holds an analysis thread and its trace's records), and how long one may wait for its
// client's next message (a stalled client would hold them forever).

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "common/periodic_loop.h"

namespace fleetprof {

class UploadGuard {
 public:
  struct Limits {
    int max_uploads = 16;                       // --max_concurrent_uploads
    int max_per_peer = 8;                       // --max_uploads_per_peer
    std::chrono::milliseconds idle_timeout{60'000};  // --upload_idle_timeout_s
  };
  // The idle timeout runs on `clock`, which outlives the guard.
  UploadGuard(Limits limits, Clock* clock);
  ~UploadGuard();  // stops the watchdog
  UploadGuard(const UploadGuard&) = delete;
  UploadGuard& operator=(const UploadGuard&) = delete;

  // An upload's place, released when destroyed; it also times the waits for the client.
  class Admission {
   public:
    ~Admission();
    Admission(const Admission&) = delete;
    Admission& operator=(const Admission&) = delete;

    // The upload waits for its client's next message from now: past the idle timeout the
    // watchdog calls `abort`, which ends the wait and returns true, or returns false when the
    // message has come meanwhile.
    void WaitingForClient();
    // The message came, or the stream ended.
    void ClientSent();
    // True once the watchdog broke the upload off.
    bool timed_out() const { return timed_out_.load(); }

   private:
    friend class UploadGuard;
    Admission(UploadGuard* guard, std::string peer, std::function<bool()> abort)
        : guard_(guard), peer_(std::move(peer)), abort_(std::move(abort)) {}
    UploadGuard* guard_;
    std::string peer_;
    std::function<bool()> abort_;
    std::atomic<int64_t> waiting_since_ns_{0};  // the clock's MonotonicNanos; 0 while not waiting
    std::atomic<bool> timed_out_{false};
  };
  // UNAVAILABLE (transient: clients retry it with backoff), naming the flag, when as many
  // uploads run already, in all or from this peer. `abort` breaks the upload off (above).
  absl::StatusOr<std::unique_ptr<Admission>> Admit(const std::string& peer, std::function<bool()> abort);

  const Limits& limits() const { return limits_; }

  // Breaks off the uploads that have waited past the idle timeout; returns when to look again.
  // The watchdog's tick; public for tests.
  int64_t BreakOffIdle(int64_t now) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const Limits limits_;
  Clock* clock_;
  absl::Mutex mu_;
  int running_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, int> per_peer_ ABSL_GUARDED_BY(mu_);
  std::set<Admission*> admitted_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<PeriodicLoop> watchdog_;  // last: stops before the members it uses go
};

}  // namespace fleetprof
