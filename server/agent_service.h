#pragma once
// AgentService: the long-lived stream each node agent dials, plus the agent list.

#include <functional>

#include "fleetprof/v1/agent.grpc.pb.h"
#include "server/agent_registry.h"
#include "server/grpc_access.h"

namespace fleetprof {

class AgentServiceImpl final : public v1::AgentService::Service {
 public:
  using UpdateHandler = std::function<void(const std::string& node, const v1::CaptureUpdate&)>;

  AgentServiceImpl(AgentRegistry* registry, const GrpcAccess* access, int64_t heartbeat_interval_ms,
                   UpdateHandler on_update)
      : registry_(registry),
        access_(access),
        heartbeat_interval_ms_(heartbeat_interval_ms),
        on_update_(std::move(on_update)) {}

  grpc::Status Connect(grpc::ServerContext* context,
                       grpc::ServerReaderWriter<v1::ServerMessage, v1::AgentMessage>* stream) override;
  grpc::Status ListAgents(grpc::ServerContext*, const v1::ListAgentsRequest*,
                          v1::ListAgentsResponse* response) override;

 private:
  AgentRegistry* registry_;
  const GrpcAccess* access_;
  int64_t heartbeat_interval_ms_;
  UpdateHandler on_update_;
};

}  // namespace fleetprof
