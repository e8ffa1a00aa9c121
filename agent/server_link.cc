#include "agent/server_link.h"

#include <algorithm>

#include "common/runtime.h"
#include "grpcpp/grpcpp.h"
#include "spdlog/spdlog.h"

namespace fleetprof {
namespace {
constexpr size_t kMaxQueued = 1000;
constexpr int kSessionProbes = 8;            // sent when a session starts, a few ms apart
constexpr int64_t kProbeSpacingNs = 5'000'000;
constexpr int64_t kNanosPerMs = 1'000'000;
constexpr int64_t kFirstBackoffNs = 250 * kNanosPerMs;  // after a lost link; doubles up to kMaxBackoffNs
constexpr int64_t kMaxBackoffNs = 10'000 * kNanosPerMs;
constexpr int64_t kHealthySessionNs = 10'000 * kNanosPerMs;  // a session this long resets the backoff
constexpr size_t kClockSamples = 16;         // the best of the last this many answers counts
}  // namespace

ServerLink::ServerLink(std::shared_ptr<grpc::Channel> channel, std::function<v1::AgentHello()> hello,
                       std::function<v1::AgentHeartbeat()> heartbeat,
                       std::function<void(const v1::ServerMessage&)> on_message, const Clock* clock)
    : clock_(*clock),
      channel_(std::move(channel)),
      hello_(std::move(hello)),
      heartbeat_(std::move(heartbeat)),
      on_message_(std::move(on_message)) {}

ServerLink::~ServerLink() { Stop(); }

void ServerLink::Start() { thread_ = std::thread([this] { Loop(); }); }

void ServerLink::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    if (live_context_ != nullptr) live_context_->TryCancel();
  }
  if (thread_.joinable()) thread_.join();
}

bool ServerLink::Write(Stream* stream, const v1::AgentMessage& message) {
  absl::MutexLock lock(&write_mu_);
  return stream->Write(message);
}

void ServerLink::Send(const v1::AgentMessage& message) {
  // Holding write_mu_ keeps the stream alive while writing (see the lock order in the header).
  absl::MutexLock write_lock(&write_mu_);
  Stream* stream = nullptr;
  {
    absl::MutexLock lock(&mu_);
    stream = live_stream_;
    if (stream == nullptr) {
      if (outbox_.size() >= kMaxQueued) outbox_.pop_front();
      outbox_.push_back(message);
      return;
    }
  }
  if (!stream->Write(message)) {
    absl::MutexLock lock(&mu_);
    if (outbox_.size() >= kMaxQueued) outbox_.pop_front();
    outbox_.push_back(message);  // the session is breaking; resend after reconnect
  }
}

void ServerLink::Post(const v1::AgentMessage& message) {
  absl::MutexLock lock(&mu_);
  posted_.push_back(message);
  TrimPosted();
}

void ServerLink::TrimPosted() {
  while (posted_.size() > kMaxPosted) {
    posted_.pop_front();
    // Said on the first drop and once per 100 after: a stalled server must not flood the log.
    if (dropped_posts_.fetch_add(1) % 100 == 0) {
      spdlog::warn("the server is slow to take this agent's messages: {} queued, the oldest dropped ({} so far)",
                   kMaxPosted, dropped_posts_.load());
    }
  }
}

void ServerLink::RequeuePosted(std::deque<v1::AgentMessage> unsent) {
  absl::MutexLock lock(&mu_);
  for (v1::AgentMessage& m : posted_) unsent.push_back(std::move(m));
  posted_.swap(unsent);
  TrimPosted();
}

void ServerLink::Probe(Stream* stream) {
  v1::AgentMessage probe;
  probe.mutable_clock_probe()->set_agent_sent_ns(clock_.Now());
  Write(stream, probe);
}

void ServerLink::OnClockReply(const v1::ClockReply& reply) {
  const int64_t received = clock_.Now();
  const int64_t sent = reply.agent_sent_ns();
  if (sent <= 0 || received < sent) return;  // not ours, or the wall clock stepped back
  // NTP's estimate: the server answered halfway through the round trip, give or take half of it.
  ClockSync sample;
  const __int128 midpoint = (static_cast<__int128>(sent) + received) / 2;
  sample.offset_ns = static_cast<int64_t>(static_cast<__int128>(reply.server_ns()) - midpoint);
  sample.uncertainty_ns = (received - sent + 1) / 2;
  absl::MutexLock lock(&clock_mu_);
  clock_samples_.push_back(sample);
  if (clock_samples_.size() > kClockSamples) clock_samples_.pop_front();
}

std::optional<ClockSync> ServerLink::clock_sync() const {
  absl::MutexLock lock(&clock_mu_);
  std::optional<ClockSync> best;
  for (const ClockSync& s : clock_samples_) {
    if (!best || s.uncertainty_ns < best->uncertainty_ns) best = s;
  }
  return best;
}

bool ServerLink::WaitForStopOrBreak(Stream* stream, int64_t wait_ns) {
  const int64_t deadline = clock_.MonotonicNanos() + wait_ns;
  while (true) {
    std::deque<v1::AgentMessage> posted;
    {
      absl::MutexLock lock(&mu_);
      const auto woken = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || stream_broken_ || !posted_.empty();
      };
      clock_.WaitUntil(&mu_, absl::Condition(&woken), deadline);
      if (stopping_ || stream_broken_) return true;
      if (posted_.empty()) return false;  // the wait is over
      posted.swap(posted_);
    }
    // Written without mu_: Post goes on queueing (bounded) while the server is slow to take these.
    while (!posted.empty()) {
      if (!Write(stream, posted.front())) {
        RequeuePosted(std::move(posted));  // the stream is breaking: after the next hello
        return true;
      }
      posted.pop_front();
    }
    // Firings arriving faster than a slow server takes them must not hold back the heartbeat,
    // whose absence would end the session.
    if (clock_.MonotonicNanos() >= deadline) return false;
  }
}

void ServerLink::Loop() {
  int64_t backoff_ns = kFirstBackoffNs;
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
      stream_broken_ = false;
    }
    const int64_t started = clock_.MonotonicNanos();
    RunSession();
    connected_ = false;
    // A session that lived a while was healthy: start backing off from scratch.
    if (clock_.MonotonicNanos() - started > kHealthySessionNs) backoff_ns = kFirstBackoffNs;
    {
      absl::MutexLock lock(&mu_);
      const auto stop = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; };
      if (clock_.WaitUntil(&mu_, absl::Condition(&stop), clock_.MonotonicNanos() + backoff_ns)) return;
    }
    backoff_ns = std::min(backoff_ns * 2, kMaxBackoffNs);
  }
}

void ServerLink::GoLive(Stream* stream) {
  absl::MutexLock write_lock(&write_mu_);
  std::deque<v1::AgentMessage> queued;
  {
    absl::MutexLock lock(&mu_);
    live_stream_ = stream;
    queued.swap(outbox_);
    connected_ = true;
  }
  for (const auto& m : queued) stream->Write(m);
}

void ServerLink::MeasureClock(Stream* stream) {
  {
    // A new session may reach another replica, with a clock of its own: measure afresh.
    absl::MutexLock lock(&clock_mu_);
    clock_samples_.clear();
  }
  for (int i = 0; i < kSessionProbes; ++i) {
    Probe(stream);
    if (WaitForStopOrBreak(stream, kProbeSpacingNs)) return;
  }
}

void ServerLink::BeatUntilBroken(Stream* stream, int64_t interval_ns) {
  while (!WaitForStopOrBreak(stream, interval_ns)) {
    v1::AgentMessage beat;
    *beat.mutable_heartbeat() = heartbeat_();
    beat.mutable_heartbeat()->set_sent_at_ns(clock_.Now());
    if (std::optional<ClockSync> sync = clock_sync()) {
      beat.mutable_heartbeat()->set_clock_offset_ns(sync->offset_ns);
      beat.mutable_heartbeat()->set_clock_uncertainty_ns(sync->uncertainty_ns);
    }
    if (!Write(stream, beat)) return;
    Probe(stream);
  }
}

void ServerLink::RunSession() {
  auto stub = v1::AgentService::NewStub(channel_);
  grpc::ClientContext context;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    live_context_ = &context;
  }
  std::unique_ptr<Stream> stream = stub->Connect(&context);
  v1::AgentMessage hello;
  *hello.mutable_hello() = hello_();
  v1::ServerMessage message;
  if (Write(stream.get(), hello) && stream->Read(&message) && message.has_welcome()) {
    const int64_t interval_ns =
        message.welcome().heartbeat_interval_ms() > 0 ? message.welcome().heartbeat_interval_ms() * kNanosPerMs
                                                      : kDefaultHeartbeatNs;
    GoLive(stream.get());
    spdlog::info("connected to server node={}", hello.hello().node());
    // Server messages arrive on this reader; its end means the stream broke.
    std::thread reader([&] {
      v1::ServerMessage incoming;
      while (stream->Read(&incoming)) {
        if (incoming.has_clock_reply()) {
          OnClockReply(incoming.clock_reply());
        } else if (on_message_) {
          on_message_(incoming);
        }
      }
      absl::MutexLock lock(&mu_);
      stream_broken_ = true;
    });
    MeasureClock(stream.get());
    BeatUntilBroken(stream.get(), interval_ns);
    {
      absl::MutexLock write_lock(&write_mu_);
      absl::MutexLock lock(&mu_);
      connected_ = false;
      live_stream_ = nullptr;
    }
    context.TryCancel();
    reader.join();
    absl::MutexLock lock(&mu_);
    if (!stopping_) spdlog::warn("link to server lost; reconnecting");
  } else {
    context.TryCancel();
  }
  LogSessionEnd(stream->Finish());
  absl::MutexLock lock(&mu_);
  live_context_ = nullptr;
}

void ServerLink::LogSessionEnd(const grpc::Status& status) {
  if (!connected_) {
    // Unreachable is routine while the server restarts; a refusal says what to fix.
    if (status.error_code() == grpc::StatusCode::UNAVAILABLE || status.error_code() == grpc::StatusCode::CANCELLED ||
        status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
      spdlog::debug("connect ended: {}", status.error_message());
    } else {
      spdlog::warn("the server refused this agent's hello ({}): {}", static_cast<int>(status.error_code()),
                   status.error_message());
    }
  }
}

}  // namespace fleetprof
