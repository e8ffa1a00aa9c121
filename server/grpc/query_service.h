#pragma once
// QueryService over gRPC: the export stream. Every unary query is served from the operation
// table by GrpcOperations (server/grpc_operations.h).

#include "fleetprof/v1/query.grpc.pb.h"
#include "server/grpc/grpc_access.h"
#include "server/grpc/grpc_operations.h"
#include "server/query/query_api.h"

namespace fleetprof {

class QueryServiceImpl final : public v1::QueryService::Service {
 public:
  QueryServiceImpl(QueryApi* api, const GrpcAccess* access, const Operations& operations)
      : api_(api), access_(access) {
    ServeFromTable(v1::QueryService::service_full_name(), operations, [this](int i) { MarkMethodGeneric(i); });
  }

  grpc::Status ExportProfile(grpc::ServerContext* context, const v1::ExportProfileRequest* request,
                             grpc::ServerWriter<v1::ExportChunk>* writer) override;

 private:
  QueryApi* api_;
  const GrpcAccess* access_;
};

}  // namespace fleetprof
