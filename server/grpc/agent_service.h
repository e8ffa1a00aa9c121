#pragma once
// AgentService: the long-lived stream each node agent dials (the agent list is served from the
// operation table by GrpcOperations, server/grpc_operations.h). On gRPC's
// callback (reactor) API: an idle agent stream holds no thread, so a server keeps thousands of
// agents with a few threads; work happens only when a message arrives or leaves.

#include <functional>
#include <string>

#include "common/clock.h"
#include "fleetprof/v1/agent.grpc.pb.h"
#include "server/fleet/agent_registry.h"
#include "server/grpc/grpc_access.h"
#include "server/grpc/grpc_operations.h"

namespace fleetprof {

class AgentServiceImpl final : public v1::AgentService::CallbackService {
 public:
  // Handles a capture update off gRPC's callback threads (it writes to the store, which may be
  // etcd) and calls `done` when finished; the stream reads its next message only then, so one
  // agent has at most one update in flight and its updates are handled in order.
  using UpdateHandler =
      std::function<void(const std::string& node, const v1::CaptureUpdate&, std::function<void()> done)>;

  // `clock` answers the agents' clock probes and times their hello (the server's
  // HealthTick ends the streams past it on the same clock).
  AgentServiceImpl(AgentRegistry* registry, const GrpcAccess* access, const Clock* clock,
                   int64_t heartbeat_interval_ms, UpdateHandler on_update, const Operations& operations)
      : registry_(registry),
        access_(access),
        clock_(clock),
        heartbeat_interval_ms_(heartbeat_interval_ms),
        on_update_(std::move(on_update)) {
    ServeFromTable(v1::AgentService::service_full_name(), operations, [this](int i) { MarkMethodGeneric(i); });
  }

  grpc::ServerBidiReactor<v1::AgentMessage, v1::ServerMessage>* Connect(grpc::CallbackServerContext* context) override;

  // Called on gRPC's callback threads, so neither may block. Set before the server starts.
  // `on_connected`: an agent's hello was accepted (it can be sent commands now).
  void set_on_connected(std::function<void(const std::string& node)> on_connected) {
    on_connected_ = std::move(on_connected);
  }
  // `on_trigger_firing`: an agent's device trigger fired (agent.proto, TriggerFiring).
  using FiringHandler = std::function<void(const std::string& node, const v1::TriggerFiring&)>;
  void set_on_trigger_firing(FiringHandler on_firing) { on_trigger_firing_ = std::move(on_firing); }
  const std::function<void(const std::string&)>& on_connected() const { return on_connected_; }
  const FiringHandler& on_trigger_firing() const { return on_trigger_firing_; }

  // What one stream needs of the service (agent_service.cc's reactor).
  AgentRegistry* registry() const { return registry_; }
  const GrpcAccess* access() const { return access_; }
  const Clock* clock() const { return clock_; }
  int64_t heartbeat_interval_ms() const { return heartbeat_interval_ms_; }
  const UpdateHandler& on_update() const { return on_update_; }

 private:
  AgentRegistry* registry_;
  const GrpcAccess* access_;
  const Clock* clock_;
  int64_t heartbeat_interval_ms_;
  UpdateHandler on_update_;
  std::function<void(const std::string&)> on_connected_;
  FiringHandler on_trigger_firing_;
};

}  // namespace fleetprof
