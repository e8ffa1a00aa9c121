#include "agent/server_link.h"

#include <algorithm>

#include "common/runtime.h"
#include "grpcpp/grpcpp.h"
#include "spdlog/spdlog.h"

namespace fleetprof {
namespace {
constexpr size_t kMaxQueued = 1000;
}  // namespace

ServerLink::ServerLink(std::shared_ptr<grpc::Channel> channel, std::function<v1::AgentHello()> hello,
                       std::function<v1::AgentHeartbeat()> heartbeat,
                       std::function<void(const v1::ServerMessage&)> on_message)
    : channel_(std::move(channel)),
      hello_(std::move(hello)),
      heartbeat_(std::move(heartbeat)),
      on_message_(std::move(on_message)) {}

ServerLink::~ServerLink() { Stop(); }

void ServerLink::Start() { thread_ = std::thread([this] { Loop(); }); }

void ServerLink::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    if (live_context_ != nullptr) live_context_->TryCancel();
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool ServerLink::Write(Stream* stream, const v1::AgentMessage& message) {
  std::lock_guard lock(write_mu_);
  return stream->Write(message);
}

void ServerLink::Send(const v1::AgentMessage& message) {
  // Lock order: write_mu_, then mu_. Holding write_mu_ keeps the stream alive while writing.
  std::lock_guard write_lock(write_mu_);
  Stream* stream = nullptr;
  {
    std::lock_guard lock(mu_);
    stream = live_stream_;
    if (stream == nullptr) {
      if (outbox_.size() >= kMaxQueued) outbox_.pop_front();
      outbox_.push_back(message);
      return;
    }
  }
  if (!stream->Write(message)) {
    std::lock_guard lock(mu_);
    if (outbox_.size() >= kMaxQueued) outbox_.pop_front();
    outbox_.push_back(message);  // the session is breaking; resend after reconnect
  }
}

void ServerLink::Loop() {
  auto backoff = std::chrono::milliseconds(250);
  while (true) {
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
      stream_broken_ = false;
    }
    const auto started = std::chrono::steady_clock::now();
    RunSession();
    connected_ = false;
    // A session that lived a while was healthy: start backing off from scratch.
    if (std::chrono::steady_clock::now() - started > std::chrono::seconds(10)) {
      backoff = std::chrono::milliseconds(250);
    }
    {
      std::unique_lock lock(mu_);
      if (wake_.wait_for(lock, backoff, [&] { return stopping_; })) return;
    }
    backoff = std::min(backoff * 2, std::chrono::milliseconds(10000));
  }
}

void ServerLink::RunSession() {
  auto stub = v1::AgentService::NewStub(channel_);
  grpc::ClientContext context;
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    live_context_ = &context;
  }
  std::unique_ptr<Stream> stream = stub->Connect(&context);
  v1::AgentMessage hello;
  *hello.mutable_hello() = hello_();
  v1::ServerMessage message;
  std::chrono::milliseconds interval(2000);
  if (Write(stream.get(), hello) && stream->Read(&message) && message.has_welcome()) {
    if (message.welcome().heartbeat_interval_ms() > 0) {
      interval = std::chrono::milliseconds(message.welcome().heartbeat_interval_ms());
    }
    {
      std::lock_guard write_lock(write_mu_);
      std::deque<v1::AgentMessage> queued;
      {
        std::lock_guard lock(mu_);
        live_stream_ = stream.get();
        queued.swap(outbox_);
        connected_ = true;
      }
      for (const auto& m : queued) stream->Write(m);
    }
    spdlog::info("connected to server node={}", hello.hello().node());
    // Server messages arrive on this reader; its end means the stream broke.
    std::thread reader([&] {
      v1::ServerMessage incoming;
      while (stream->Read(&incoming)) {
        if (on_message_) on_message_(incoming);
      }
      std::lock_guard lock(mu_);
      stream_broken_ = true;
      wake_.notify_all();
    });
    while (true) {
      {
        std::unique_lock lock(mu_);
        wake_.wait_for(lock, interval, [&] { return stopping_ || stream_broken_; });
        if (stopping_ || stream_broken_) break;
      }
      v1::AgentMessage beat;
      *beat.mutable_heartbeat() = heartbeat_();
      beat.mutable_heartbeat()->set_sent_at_ns(UnixNanos());
      if (!Write(stream.get(), beat)) break;
    }
    {
      std::lock_guard write_lock(write_mu_);
      std::lock_guard lock(mu_);
      connected_ = false;
      live_stream_ = nullptr;
    }
    context.TryCancel();
    reader.join();
    std::lock_guard lock(mu_);
    if (!stopping_) spdlog::warn("link to server lost; reconnecting");
  } else {
    context.TryCancel();
  }
  grpc::Status status = stream->Finish();
  if (!connected_) spdlog::debug("connect ended: {}", status.error_message());
  std::lock_guard lock(mu_);
  live_context_ = nullptr;
}

}  // namespace fleetprof
