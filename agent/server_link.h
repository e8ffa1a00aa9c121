#pragma once
// The agent's live link to fleetprof-server: dials AgentService.Connect, says hello,
// heartbeats, and redials with exponential backoff whenever the stream breaks.

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "fleetprof/v1/agent.grpc.pb.h"
#include "grpcpp/channel.h"

namespace fleetprof {

class ServerLink {
 public:
  // `hello` is sent on every (re)connect; `heartbeat` fills each heartbeat.
  ServerLink(std::shared_ptr<grpc::Channel> channel, v1::AgentHello hello,
             std::function<v1::AgentHeartbeat()> heartbeat);
  ~ServerLink();

  void Start();
  void Stop();
  bool connected() const { return connected_.load(); }

 private:
  void Loop();
  // One connection's life; returns when the stream breaks or Stop is called.
  void RunSession();
  bool WaitFor(std::chrono::milliseconds d);  // false when stopping

  std::shared_ptr<grpc::Channel> channel_;
  v1::AgentHello hello_;
  std::function<v1::AgentHeartbeat()> heartbeat_;
  std::atomic<bool> connected_{false};
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool stream_broken_ = false;
  grpc::ClientContext* live_context_ = nullptr;
  std::thread thread_;
};

}  // namespace fleetprof
