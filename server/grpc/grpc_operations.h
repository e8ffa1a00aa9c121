#pragma once
// gRPC's face of the operation table (api/operations.h): one generic callback service answers
// every unary method the table serves, by the method's name, so a new query needs no gRPC code.
// The typed services keep only what the table cannot say (streams: agent links, uploads,
// exports, capture watches) and hand the rest over with ServeFromTable().
//
// A call is read on gRPC's callback thread and run on a worker (an operation may read the store
// for seconds), at most `max_in_flight` at once: beyond that it is answered RESOURCE_EXHAUSTED,
// never queued without bound. Queries (QueryService, where a diagnosis may wait its turn for
// seconds, and Pyroscope's QuerierService) run on their own pool, so they never hold up the
// fleet's quick calls (captures, schedules, agents); a call cancelled while it waited for a
// worker is not run.

#include <atomic>
#include <memory>

#include "api/operations.h"
#include "common/worker_pool.h"
#include "google/protobuf/descriptor.h"
#include "grpcpp/generic/async_generic_service.h"
#include "server/grpc/grpc_access.h"

namespace fleetprof {

class GrpcOperations final : public grpc::CallbackGenericService {
 public:
  // All must outlive the service (and the gRPC server it is registered with).
  GrpcOperations(const Operations* operations, const GrpcAccess* access, WorkerPool* query_workers,
                 WorkerPool* fleet_workers, int max_in_flight)
      : operations_(operations),
        access_(access),
        query_workers_(query_workers),
        fleet_workers_(fleet_workers),
        max_in_flight_(max_in_flight) {}

  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* context) override;

  // For the reactors.
  const Operations* operations() const { return operations_; }
  const GrpcAccess* access() const { return access_; }
  // The pool that runs `method`'s calls.
  WorkerPool* WorkersFor(const google::protobuf::MethodDescriptor* method) const;
  // Takes a slot for one call; false when max_in_flight are running.
  bool Admit();
  void Release() { in_flight_.fetch_sub(1); }

 private:
  const Operations* operations_;
  const GrpcAccess* access_;
  WorkerPool* query_workers_;
  WorkerPool* fleet_workers_;
  const int max_in_flight_;
  std::atomic<int> in_flight_{0};
};

// Marks generic, in a typed service, every method of `service_full_name` that `operations`
// serves as unary, so the generic service above answers it; `mark(index)` is the service's
// own MarkMethodGeneric (protected in grpc::Service).
template <typename MarkFn>
void ServeFromTable(const char* service_full_name, const Operations& operations, MarkFn mark) {
  const auto* service = google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(service_full_name);
  for (int i = 0; service != nullptr && i < service->method_count(); ++i) {
    if (operations.FindUnary(service->method(i)) != nullptr) mark(i);
  }
}

}  // namespace fleetprof

namespace fleetprof {

// A typed service whose every method the table serves: registered only so that reflection
// and the service's name stay as they were (ScheduleService).
template <typename Service>
class TableServedService final : public Service {
 public:
  TableServedService(const char* service_full_name, const Operations& operations) {
    ServeFromTable(service_full_name, operations, [this](int index) { this->MarkMethodGeneric(index); });
  }
};

}  // namespace fleetprof
