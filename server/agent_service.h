#pragma once
// AgentService: the long-lived stream each node agent dials, plus the agent list.

#include "fleetprof/v1/agent.grpc.pb.h"
#include "server/agent_registry.h"

namespace fleetprof {

class AgentServiceImpl final : public v1::AgentService::Service {
 public:
  AgentServiceImpl(AgentRegistry* registry, int64_t heartbeat_interval_ms)
      : registry_(registry), heartbeat_interval_ms_(heartbeat_interval_ms) {}

  grpc::Status Connect(grpc::ServerContext* context,
                       grpc::ServerReaderWriter<v1::ServerMessage, v1::AgentMessage>* stream) override;
  grpc::Status ListAgents(grpc::ServerContext*, const v1::ListAgentsRequest*,
                          v1::ListAgentsResponse* response) override;

 private:
  AgentRegistry* registry_;
  int64_t heartbeat_interval_ms_;
};

}  // namespace fleetprof
