#include "server/grpc/grpc_operations.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/call_bounds.h"
#include "common/clock.h"
#include "common/system_time.h"
#include "google/protobuf/message.h"
#include "grpcpp/support/proto_buffer_reader.h"
#include "server/grpc/grpc_status.h"

namespace fleetprof {
namespace {

using google::protobuf::Message;

// One unary call: read the one request, run its operation on a worker, write the answer and
// finish. The reactor lives until OnDone, which gRPC calls only after Finish.
class UnaryReactor final : public grpc::ServerGenericBidiReactor {
 public:
  UnaryReactor(GrpcOperations* service, grpc::GenericCallbackServerContext* context)
      : service_(service), context_(context) {
    // Fail closed before reading a byte: the access decision was made on the metadata.
    absl::StatusOr<Principal> caller = service_->access()->Caller(context_);
    if (!caller.ok()) {
      Finish(ToGrpcStatus(caller.status()));
      return;
    }
    caller_ = *std::move(caller);
    method_ = google::protobuf::DescriptorPool::generated_pool()->FindMethodByName(GrpcPathToName(context_->method()));
    run_ = method_ == nullptr ? nullptr : service_->operations()->FindUnary(method_);
    if (run_ == nullptr) {
      Finish(grpc::Status(grpc::StatusCode::UNIMPLEMENTED, absl::StrCat("no method ", context_->method())));
      return;
    }
    StartRead(&request_bytes_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "the call ended before its request message"));
      return;
    }
    if (!service_->Admit()) {
      Finish(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                          "too many queries in progress (--max_rpc_threads); retry shortly"));
      return;
    }
    service_->WorkersFor(method_)->Post([this] {
      grpc::Status status = context_->IsCancelled()
                                ? grpc::Status(grpc::StatusCode::CANCELLED, "cancelled while it waited for a worker")
                                : Run();
      service_->Release();
      if (status.ok()) {
        StartWriteAndFinish(&response_bytes_, grpc::WriteOptions(), status);
      } else {
        Finish(status);
      }
    });
  }

  void OnDone() override { delete this; }

 private:
  // "/fleetprof.v1.QueryService/ListProfiles" -> "fleetprof.v1.QueryService.ListProfiles"
  static std::string GrpcPathToName(const std::string& path) {
    std::string name = path.empty() ? path : path.substr(1);
    const size_t slash = name.find('/');
    if (slash != std::string::npos) name[slash] = '.';
    return name;
  }

  grpc::Status Run() {
    const Message* prototype = google::protobuf::MessageFactory::generated_factory()->GetPrototype(method_->input_type());
    std::unique_ptr<Message> request(prototype->New());
    grpc::ProtoBufferReader reader(&request_bytes_);
    if (!request->ParseFromZeroCopyStream(&reader)) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          absl::StrCat("the request is not a ", method_->input_type()->full_name()));
    }
    // The client's deadline and its going away bound the slow I/O below (object-store reads).
    // Both on the real clock: gRPC keeps the deadline in real time, and CallBounds are on it.
    CallBounds bounds;
    if (context_->deadline() != std::chrono::system_clock::time_point::max()) {
      bounds.deadline_ns =
          RealClock()->MonotonicNanos() + std::max<int64_t>(0, NanosUntil(*RealClock(), context_->deadline()));
    }
    bounds.cancelled = [this] { return context_->IsCancelled(); };
    ScopedCallBounds scope(&bounds);
    absl::StatusOr<std::unique_ptr<Message>> response = (*run_)(*request, caller_);
    if (!response.ok()) return ToGrpcStatus(response.status());
    std::string bytes;
    if (!(*response)->SerializeToString(&bytes)) return grpc::Status(grpc::StatusCode::INTERNAL, "cannot encode the answer");
    grpc::Slice slice(std::move(bytes));
    response_bytes_ = grpc::ByteBuffer(&slice, 1);
    return grpc::Status::OK;
  }

  GrpcOperations* service_;
  grpc::GenericCallbackServerContext* context_;
  const google::protobuf::MethodDescriptor* method_ = nullptr;
  const Operations::UnaryFn* run_ = nullptr;
  Principal caller_;  // as the access check found it when the call began
  grpc::ByteBuffer request_bytes_;
  grpc::ByteBuffer response_bytes_;
};

}  // namespace

grpc::ServerGenericBidiReactor* GrpcOperations::CreateReactor(grpc::GenericCallbackServerContext* context) {
  return new UnaryReactor(this, context);
}

WorkerPool* GrpcOperations::WorkersFor(const google::protobuf::MethodDescriptor* method) const {
  const std::string& service = method->service()->full_name();
  return service == "fleetprof.v1.QueryService" || service == "querier.v1.QuerierService" ? query_workers_
                                                                                             : fleet_workers_;
}

bool GrpcOperations::Admit() {
  if (in_flight_.fetch_add(1) >= max_in_flight_) {
    in_flight_.fetch_sub(1);
    return false;
  }
  return true;
}

}  // namespace fleetprof
