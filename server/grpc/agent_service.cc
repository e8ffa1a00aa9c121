#include "server/grpc/agent_service.h"

#include <deque>
#include <memory>
#include "absl/synchronization/mutex.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "common/text_checks.h"
#include "server/grpc/grpc_status.h"
#include "spdlog/spdlog.h"

namespace fleetprof {
namespace {

// How long a new stream may take to say hello (agents send it at once).
constexpr int64_t kHelloTimeoutNs = int64_t{10} * 1'000'000'000;

// One agent's Connect stream. Reads one message at a time (hello first, then heartbeats and
// capture updates); commands from other threads (captures) queue in `Outbox` and are written
// one at a time. The outbox outlives the reactor: a capture that sends after the stream ended
// finds it closed instead of a freed object.
class AgentStream final : public grpc::ServerBidiReactor<v1::AgentMessage, v1::ServerMessage> {
 public:
  AgentStream(AgentServiceImpl* service, grpc::CallbackServerContext* context)
      : service_(service), context_(context), outbox_(std::make_shared<Outbox>()) {
    outbox_->stream = this;
    auto caller = service_->access()->Caller(context);
    if (!caller.ok()) {
      Finish(ToGrpcStatus(caller.status()));
      return;
    }
    caller_ = *std::move(caller);
    // A stream that never says hello would hold its slot for as long as the client likes.
    service_->access()->SetStepDeadline(context, service_->clock()->MonotonicNanos() + kHelloTimeoutNs);
    StartRead(&in_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      End(context_->IsCancelled() ? grpc::Status::CANCELLED : grpc::Status::OK);
      return;
    }
    // Each message is checked again: a token revoked since the stream opened ends it here.
    if (auto caller = service_->access()->Caller(context_); !caller.ok()) {
      End(ToGrpcStatus(caller.status()));
      return;
    }
    if (node_.empty()) {
      if (grpc::Status s = Hello(); !s.ok()) {
        End(s);
        return;
      }
    } else {
      if (in_.has_heartbeat()) {
        if (absl::Status s = service_->registry()->Heartbeat(node_, in_.heartbeat()); !s.ok()) {
          spdlog::warn("agent stream of node {} ended: {}", absl::CHexEscape(node_), std::string(s.message()));
          End(ToGrpcStatus(s));
          return;
        }
      }
      if (in_.has_clock_probe()) {
        // Answered at once, before anything else is handled: the round trip is the measure.
        v1::ServerMessage reply;
        reply.mutable_clock_reply()->set_agent_sent_ns(in_.clock_probe().agent_sent_ns());
        reply.mutable_clock_reply()->set_server_ns(service_->clock()->Now());
        Send(outbox_, reply);
      }
      if (in_.has_trigger_firing() && service_->on_trigger_firing()) {
        service_->on_trigger_firing()(node_, in_.trigger_firing());
      }
      if (in_.has_capture_update() && service_->on_update()) {
        // No read is outstanding until `done`, so the stream cannot finish (nor this reactor be
        // freed) while the update is handled.
        service_->on_update()(node_, in_.capture_update(), [this] { StartRead(&in_); });
        return;
      }
    }
    StartRead(&in_);
  }

  void OnWriteDone(bool ok) override {
    bool finish = false;
    const v1::ServerMessage* next = nullptr;
    {
      absl::MutexLock lock(&outbox_->mu);
      outbox_->queue.pop_front();
      if (!ok) outbox_->open = false;  // the client is gone; reads end too
      if (outbox_->open && !outbox_->queue.empty()) {
        next = &outbox_->queue.front();
      } else {
        outbox_->writing = false;
        finish = outbox_->finish_pending;
      }
    }
    if (next != nullptr) {
      StartWrite(next);
    } else if (finish) {
      Finish(final_status_);
    }
  }

  void OnDone() override {
    if (session_ != 0) service_->registry()->Disconnected(node_, session_);
    {
      absl::MutexLock lock(&outbox_->mu);
      outbox_->open = false;
      outbox_->stream = nullptr;
    }
    delete this;
  }

 private:
  struct Outbox {
    absl::Mutex mu;
    std::deque<v1::ServerMessage> queue ABSL_GUARDED_BY(mu);  // front: being written while `writing`
    bool open ABSL_GUARDED_BY(mu) = true;
    bool writing ABSL_GUARDED_BY(mu) = false;
    bool finish_pending ABSL_GUARDED_BY(mu) = false;  // reads ended while a write was in flight
    AgentStream* stream ABSL_GUARDED_BY(mu) = nullptr;
  };

  // Queues `message`; false once the stream is closed. Safe from any thread, at any time.
  static bool Send(const std::shared_ptr<Outbox>& outbox, const v1::ServerMessage& message) {
    AgentStream* start = nullptr;
    const v1::ServerMessage* first = nullptr;
    {
      absl::MutexLock lock(&outbox->mu);
      if (!outbox->open || outbox->finish_pending) return false;
      outbox->queue.push_back(message);
      if (!outbox->writing) {
        outbox->writing = true;
        start = outbox->stream;
        first = &outbox->queue.front();
      }
    }
    if (start != nullptr) start->StartWrite(first);  // outside the lock: it may complete inline
    return true;
  }

  grpc::Status Hello() {
    if (!in_.has_hello()) return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "the first message must be a hello");
    const std::string& node = in_.hello().node();
    if (!IsPrintableUtf8(node, 253)) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "hello.node must be 1-253 bytes of printable UTF-8 (no control characters)");
    }
    for (const v1::Target& target : in_.hello().targets()) {
      if (!target.job().empty() && !IsPrintableUtf8(target.job(), 253)) {
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "a target's job must be printable UTF-8 of at most 253 bytes");
      }
    }
    // Node identity: an agent's credential names the one node it may be, so nobody else can
    // take over a node's stream and receive its capture commands.
    if (caller_.authenticated && caller_.node() != node) {
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                          absl::StrCat("principal '", caller_.name, "' may not register as node '", node,
                                       "' (an agent token names its node: give this agent the token of '", node,
                                       "')"));
    }
    // The welcome goes before the session exists, so no capture command can overtake it.
    if (absl::Status s = service_->registry()->CheckHello(in_.hello()); !s.ok()) {
      // Said here and to the agent: a node that stays DISCONNECTED must say why on both sides.
      spdlog::warn("agent hello of node {} refused: {}", absl::CHexEscape(node), std::string(s.message()));
      return ToGrpcStatus(s);
    }
    v1::ServerMessage welcome;
    welcome.mutable_welcome()->set_node(node);
    welcome.mutable_welcome()->set_heartbeat_interval_ms(service_->heartbeat_interval_ms());
    Send(outbox_, welcome);
    std::shared_ptr<Outbox> outbox = outbox_;
    grpc::CallbackServerContext* context = context_;
    absl::StatusOr<int64_t> session = service_->registry()->Connected(
        in_.hello(), [outbox](const v1::ServerMessage& out) { return Send(outbox, out); },
        [context] { context->TryCancel(); }, caller_);
    if (!session.ok()) return ToGrpcStatus(session.status());
    node_ = node;
    session_ = *session;
    service_->access()->SetStepDeadline(context_, 0);
    if (service_->on_connected()) service_->on_connected()(node_);
    return grpc::Status::OK;
  }

  // No more reads: finishes now, or once the write in flight is done.
  void End(grpc::Status status) {
    final_status_ = std::move(status);
    bool now = false;
    {
      absl::MutexLock lock(&outbox_->mu);
      outbox_->finish_pending = true;
      now = !outbox_->writing;
    }
    if (now) Finish(final_status_);
  }

  AgentServiceImpl* service_;
  grpc::CallbackServerContext* context_;
  std::shared_ptr<Outbox> outbox_;
  Principal caller_;
  v1::AgentMessage in_;
  std::string node_;  // set by the hello
  int64_t session_ = 0;
  grpc::Status final_status_;
};

}  // namespace

grpc::ServerBidiReactor<v1::AgentMessage, v1::ServerMessage>* AgentServiceImpl::Connect(
    grpc::CallbackServerContext* context) {
  return new AgentStream(this, context);
}

}  // namespace fleetprof
