#pragma once
// The agent's live link to fleetprof-server: dials AgentService.Connect, says hello,
// heartbeats, hands server commands to a callback, and redials with exponential backoff
// whenever the stream breaks. Messages sent while the link is down wait (bounded) and go out
// after the next hello, so capture progress is not lost in a reconnect.

#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "common/clock_sync.h"
#include "fleetprof/v1/agent.grpc.pb.h"
#include "grpcpp/channel.h"

namespace fleetprof {

class ServerLink {
 public:
  // `hello` is sent on every (re)connect, then `heartbeat()` every interval; `on_message`
  // gets each server message (on the link's reader thread: return quickly).
  ServerLink(std::shared_ptr<grpc::Channel> channel, std::function<v1::AgentHello()> hello,
             std::function<v1::AgentHeartbeat()> heartbeat,
             std::function<void(const v1::ServerMessage&)> on_message, const Clock* clock = RealClock());
  ~ServerLink();

  void Start();
  void Stop();
  bool connected() const { return connected_.load(); }
  // Sends now if connected, else after the next hello (oldest dropped past 1000 queued). Waits
  // while the stream is busy or the server is slow to take it: for callers that may wait.
  void Send(const v1::AgentMessage& message);
  // Queues `message` for the link's own writer (the heartbeat thread) and returns at once,
  // never waiting on the stream: for callers a slow or stalled server must not stall (the NVML
  // sampling thread's device-trigger firings). They go out in order, after the next hello while
  // the link is down. At most kMaxPosted wait; past that the oldest is dropped and counted
  // (dropped_posts()): a capture starts when the server hears a firing, so the newest firings
  // describe what it will capture, while the oldest ones' condition may have passed.
  void Post(const v1::AgentMessage& message);
  static constexpr size_t kMaxPosted = 256;
  // Messages Post dropped so far.
  int64_t dropped_posts() const { return dropped_posts_.load(); }
  // The best of the recent clock probes of this session (each heartbeat sends one, a session
  // starts with a few); nullopt before the first answer.
  std::optional<ClockSync> clock_sync() const;

 private:
  using Stream = grpc::ClientReaderWriter<v1::AgentMessage, v1::ServerMessage>;
  void Loop();
  // One connection's life; returns when the stream breaks or Stop is called.
  void RunSession();
  // The session's stream becomes the live one; what waited in the outbox goes out first.
  void GoLive(Stream* stream);
  // A few quick probes of the server's clock, measured afresh for this session.
  void MeasureClock(Stream* stream);
  // A heartbeat (and a probe) every interval until the stream breaks or Stop is called.
  void BeatUntilBroken(Stream* stream, int64_t interval_ns);
  // True once stopping or the stream broke, else false after `wait_ns` on the clock; meanwhile
  // writes what Post queues, as it comes.
  bool WaitForStopOrBreak(Stream* stream, int64_t wait_ns) ABSL_LOCKS_EXCLUDED(write_mu_, mu_);
  // Puts back `unsent` (posted, not written: the stream broke) before what was posted since.
  void RequeuePosted(std::deque<v1::AgentMessage> unsent) ABSL_LOCKS_EXCLUDED(mu_);
  // Drops the oldest posted past kMaxPosted.
  void TrimPosted() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void LogSessionEnd(const grpc::Status& status);
  static constexpr int64_t kDefaultHeartbeatNs = 2'000'000'000;  // until the welcome says otherwise
  bool Write(Stream* stream, const v1::AgentMessage& message);
  void Probe(Stream* stream);
  void OnClockReply(const v1::ClockReply& reply);

  const Clock& clock_;
  std::shared_ptr<grpc::Channel> channel_;
  std::function<v1::AgentHello()> hello_;
  std::function<v1::AgentHeartbeat()> heartbeat_;
  std::function<void(const v1::ServerMessage&)> on_message_;
  std::atomic<bool> connected_{false};

  // Lock order: write_mu_ (one writer on the stream at a time; it also keeps the stream
  // alive while writing), then mu_. Only write_mu_ is ever held across a write.
  absl::Mutex write_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool stream_broken_ ABSL_GUARDED_BY(mu_) = false;
  grpc::ClientContext* live_context_ ABSL_GUARDED_BY(mu_) = nullptr;
  Stream* live_stream_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::deque<v1::AgentMessage> outbox_ ABSL_GUARDED_BY(mu_);
  // Post's queue: mu_ is never held across a write, so Post never waits on the stream.
  std::deque<v1::AgentMessage> posted_ ABSL_GUARDED_BY(mu_);
  std::atomic<int64_t> dropped_posts_{0};
  std::thread thread_;
  mutable absl::Mutex clock_mu_;
  std::deque<ClockSync> clock_samples_ ABSL_GUARDED_BY(clock_mu_);  // newest last
};

}  // namespace fleetprof
