#include "server/agent_service.h"

#include <memory>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "server/grpc_status.h"

namespace fleetprof {

grpc::Status AgentServiceImpl::Connect(
    grpc::ServerContext* context,
    grpc::ServerReaderWriter<v1::ServerMessage, v1::AgentMessage>* stream) {
  auto caller = access_->Caller(context);
  if (!caller.ok()) return ToGrpcStatus(caller.status());
  v1::AgentMessage message;
  if (!stream->Read(&message) || !message.has_hello()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "the first message must be a hello");
  }
  const std::string node = message.hello().node();
  if (node.empty() || node.size() > 253) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "hello.node must be 1-253 characters");
  }
  // Node identity: an agent's credential names the one node it may be, so nobody else can
  // take over a node's stream and receive its capture commands.
  if (caller->authenticated && caller->node() != node) {
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                        absl::StrCat("principal '", caller->name, "' may not register as node '", node,
                                     "' (an agent token names its node: give this agent the token of '", node, "')"));
  }
  // Commands are written from other threads (captures) while this one reads: one writer at a
  // time, and never after this handler returned.
  auto write_mu = std::make_shared<std::mutex>();
  auto open = std::make_shared<bool>(true);
  auto sender = [stream, write_mu, open](const v1::ServerMessage& out) {
    std::lock_guard lock(*write_mu);
    return *open && stream->Write(out);
  };
  // The welcome goes before the session exists, so no capture command can overtake it.
  if (absl::Status s = registry_->CheckHello(message.hello()); !s.ok()) return ToGrpcStatus(s);
  v1::ServerMessage welcome;
  welcome.mutable_welcome()->set_node(node);
  welcome.mutable_welcome()->set_heartbeat_interval_ms(heartbeat_interval_ms_);
  sender(welcome);
  const absl::StatusOr<int64_t> session =
      registry_->Connected(message.hello(), sender, [context] { context->TryCancel(); }, *caller);
  if (!session.ok()) return ToGrpcStatus(session.status());
  absl::Status ended;
  while (ended.ok() && stream->Read(&message)) {
    if (message.has_heartbeat()) ended = registry_->Heartbeat(node, message.heartbeat());
    if (message.has_capture_update() && on_update_) on_update_(node, message.capture_update());
  }
  registry_->Disconnected(node, *session);
  {
    std::lock_guard lock(*write_mu);
    *open = false;
  }
  if (!ended.ok()) return ToGrpcStatus(ended);
  return context->IsCancelled() ? grpc::Status::CANCELLED : grpc::Status::OK;
}

grpc::Status AgentServiceImpl::ListAgents(grpc::ServerContext* context, const v1::ListAgentsRequest*,
                                          v1::ListAgentsResponse* response) {
  if (auto caller = access_->Caller(context); !caller.ok()) return ToGrpcStatus(caller.status());
  *response = registry_->ListAgents();
  return grpc::Status::OK;
}

}  // namespace fleetprof
