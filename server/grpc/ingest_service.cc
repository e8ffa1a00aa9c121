#include "server/grpc/ingest_service.h"


#include "server/grpc/grpc_status.h"
#include "server/ingest/upload_session.h"

namespace fleetprof {
namespace {

// "ipv4:10.0.0.7:51234" -> "ipv4:10.0.0.7", "ipv6:[::1]:5000" -> "ipv6:[::1]": one peer per
// host, whatever its ports; other forms ("unix:…") stay whole.
std::string PeerHost(const std::string& peer) {
  if (!peer.starts_with("ipv4:") && !peer.starts_with("ipv6:")) return peer;
  const size_t colon = peer.rfind(':');
  return colon > 4 ? peer.substr(0, colon) : peer;
}

// One Upload call. gRPC calls OnReadDone when a message came (or the stream ended); the
// reactor hands it to a worker, which feeds the session and then asks for the next message.
// So at most one step of an upload runs at a time, and between steps it holds no thread.
// A client quiet for the idle timeout is answered by a worker too (BreakOff), with the read
// still pending: gRPC fails that read once the call is finished.
class UploadReactor final : public grpc::ServerReadReactor<v1::UploadRequest> {
 public:
  UploadReactor(Ingestor* ingestor, const GrpcAccess* access, WorkerPool* workers,
                grpc::CallbackServerContext* context, v1::UploadResponse* response)
      : access_(access), workers_(workers), context_(context), response_(response) {
    auto caller = access->Caller(context);
    if (!caller.ok()) {
      Finish(ToGrpcStatus(caller.status()));
      return;
    }
    auto session = ingestor->Admit(*caller, PeerHost(context->peer()), [this] { return BreakOff(); });
    if (!session.ok()) {
      Finish(ToGrpcStatus(session.status()));  // refused at once: no thread, no bytes read
      return;
    }
    session_ = *std::move(session);
    ReadNext();
  }

  void OnReadDone(bool ok) override {
    {
      absl::MutexLock lock(&mu_);
      read_pending_ = false;
      if (answered_) return;  // broken off while this read waited: a worker answers
    }
    session_->ClientSent();
    // Each message, and the end that commits, is checked again: a token revoked since the
    // upload began stores nothing more.
    if (auto caller = access_->Caller(context_); !caller.ok()) {
      workers_->Post([this, status = caller.status()] {
        session_->Finish(/*broken=*/true).status().IgnoreError();  // keeps what came, for a resume with a valid token
        Answer(status);
      });
      return;
    }
    if (!ok) {
      // The end of the stream: clean when the client closed it, broken when cancelled.
      workers_->Post([this] { Answer(session_->Finish(/*broken=*/context_->IsCancelled())); });
      return;
    }
    workers_->Post([this] {
      absl::StatusOr<bool> more = session_->Feed(std::move(message_));
      if (!more.ok()) return Answer(more.status());
      if (!*more) return Answer(session_->Finish(/*broken=*/false));
      ReadNext();
    });
  }

  void OnDone() override { delete this; }

 private:
  void ReadNext() {
    session_->WaitingForClient();
    // Under the lock, so that BreakOff sees either no read or one started. gRPC never runs
    // OnReadDone inside StartRead.
    absl::MutexLock lock(&mu_);
    read_pending_ = true;
    StartRead(&message_);
  }

  // From the idle watchdog (server/upload_guard.h): the client sent nothing for too long.
  bool BreakOff() {
    absl::MutexLock lock(&mu_);
    if (!read_pending_ || answered_) return false;  // a message came meanwhile: it is being handled
    answered_ = true;
    // No step of this upload runs (its read is pending), so this is the only one.
    workers_->Post([this] { Answer(session_->Finish(/*broken=*/true)); });
    return true;
  }

  // The upload's answer; nothing of this reactor is touched after Finish.
  void Answer(absl::StatusOr<v1::UploadResponse> result) {
    {
      absl::MutexLock lock(&mu_);
      answered_ = true;
    }
    session_.reset();  // stops what is left of the analysis here, on the worker, not on gRPC's threads
    Finish(Reply(std::move(result), response_));
  }

  const GrpcAccess* access_;
  WorkerPool* workers_;
  grpc::CallbackServerContext* context_;
  v1::UploadResponse* response_;
  std::unique_ptr<UploadSession> session_;
  v1::UploadRequest message_;
  absl::Mutex mu_;
  bool read_pending_ ABSL_GUARDED_BY(mu_) = false;
  bool answered_ ABSL_GUARDED_BY(mu_) = false;  // no more steps, Finish is (being) called
};

}  // namespace

grpc::ServerReadReactor<v1::UploadRequest>* IngestServiceImpl::Upload(grpc::CallbackServerContext* context,
                                                                      v1::UploadResponse* response) {
  return new UploadReactor(ingestor_, access_, workers_, context, response);
}

grpc::ServerUnaryReactor* IngestServiceImpl::GetUploadState(grpc::CallbackServerContext* context,
                                                            const v1::GetUploadStateRequest* request,
                                                            v1::UploadState* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  auto caller = access_->Caller(context);
  if (!caller.ok()) {
    reactor->Finish(ToGrpcStatus(caller.status()));
    return reactor;
  }
  reactor->Finish(Reply(ingestor_->GetUploadState(request->upload_id(), *caller), response));
  return reactor;
}

}  // namespace fleetprof
