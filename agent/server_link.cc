#include "agent/server_link.h"

#include <algorithm>

#include "common/runtime.h"
#include "grpcpp/grpcpp.h"
#include "spdlog/spdlog.h"

namespace fleetprof {

ServerLink::ServerLink(std::shared_ptr<grpc::Channel> channel, v1::AgentHello hello,
                       std::function<v1::AgentHeartbeat()> heartbeat)
    : channel_(std::move(channel)), hello_(std::move(hello)), heartbeat_(std::move(heartbeat)) {}

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

bool ServerLink::WaitFor(std::chrono::milliseconds d) {
  std::unique_lock lock(mu_);
  wake_.wait_for(lock, d, [&] { return stopping_ || stream_broken_; });
  return !stopping_;
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
  auto stream = stub->Connect(&context);
  v1::AgentMessage hello;
  *hello.mutable_hello() = hello_;
  v1::ServerMessage message;
  std::chrono::milliseconds interval(2000);
  if (stream->Write(hello) && stream->Read(&message) && message.has_welcome()) {
    if (message.welcome().heartbeat_interval_ms() > 0) {
      interval = std::chrono::milliseconds(message.welcome().heartbeat_interval_ms());
    }
    connected_ = true;
    spdlog::info("connected to server node={}", hello_.node());
    // Server messages (commands) arrive on this reader; its end means the stream broke.
    std::thread reader([&] {
      v1::ServerMessage incoming;
      while (stream->Read(&incoming)) {
      }
      std::lock_guard lock(mu_);
      stream_broken_ = true;
      wake_.notify_all();
    });
    while (WaitFor(interval)) {
      {
        std::lock_guard lock(mu_);
        if (stream_broken_) break;
      }
      v1::AgentMessage beat;
      *beat.mutable_heartbeat() = heartbeat_();
      beat.mutable_heartbeat()->set_sent_at_ns(UnixNanos());
      if (!stream->Write(beat)) break;
    }
    context.TryCancel();
    reader.join();
    spdlog::warn("link to server lost; reconnecting");
  } else {
    context.TryCancel();
  }
  grpc::Status status = stream->Finish();
  if (!connected_) spdlog::debug("connect failed: {}", status.error_message());
  std::lock_guard lock(mu_);
  live_context_ = nullptr;
}

}  // namespace fleetprof
