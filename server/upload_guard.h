#pragma once
// Bounds what uploads can hold on the server: how many run at once, in all and per peer (each
// holds a transport thread, an analysis thread and its trace's records), and how long one may
// wait for its client's next message (a stalled client would pin them forever).

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "server/upload_stream.h"

namespace fleetprof {

class UploadGuard {
 public:
  struct Limits {
    int max_uploads = 16;                       // --max_concurrent_uploads
    int max_per_peer = 8;                       // --max_uploads_per_peer
    std::chrono::milliseconds idle_timeout{60'000};  // --upload_idle_timeout_s
  };
  explicit UploadGuard(Limits limits);
  ~UploadGuard();  // stops the watchdog
  UploadGuard(const UploadGuard&) = delete;
  UploadGuard& operator=(const UploadGuard&) = delete;

  // An upload's place; released when destroyed.
  class Admission {
   public:
    ~Admission();
    Admission(const Admission&) = delete;
    Admission& operator=(const Admission&) = delete;

   private:
    friend class UploadGuard;
    Admission(UploadGuard* guard, std::string peer) : guard_(guard), peer_(std::move(peer)) {}
    UploadGuard* guard_;
    std::string peer_;
  };
  // UNAVAILABLE (transient: clients retry it with backoff), naming the flag, when as many
  // uploads run already, in all or from this peer.
  absl::StatusOr<std::unique_ptr<Admission>> Admit(const std::string& peer);

  // `stream` as the ingestor reads it: while a Read waits for longer than the idle timeout,
  // the watchdog Abort()s the stream. Lives while the upload does.
  class WatchedStream final : public UploadStream {
   public:
    ~WatchedStream() override;
    bool Read(v1::UploadRequest* message) override;
    bool Cancelled() override { return inner_->Cancelled(); }
    std::string Peer() override { return inner_->Peer(); }
    void Abort() override { inner_->Abort(); }
    // True when the watchdog broke the stream off.
    bool timed_out() const { return timed_out_.load(); }

   private:
    friend class UploadGuard;
    WatchedStream(UploadGuard* guard, UploadStream* inner) : guard_(guard), inner_(inner) {}
    UploadGuard* guard_;
    UploadStream* inner_;
    std::atomic<int64_t> reading_since_ns_{0};  // steady clock; 0 while not in Read
    std::atomic<bool> timed_out_{false};
  };
  std::unique_ptr<WatchedStream> Watch(UploadStream* stream);

  const Limits& limits() const { return limits_; }

 private:
  void WatchdogLoop();

  const Limits limits_;
  std::mutex mu_;
  int running_ = 0;                      // guarded by mu_
  std::map<std::string, int> per_peer_;  // guarded by mu_
  std::set<WatchedStream*> watched_;     // guarded by mu_
  bool stopping_ = false;                // guarded by mu_
  std::condition_variable stop_cv_;
  std::thread watchdog_;
};

}  // namespace fleetprof
