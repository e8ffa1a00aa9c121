#pragma once
// The gRPC edge: absl::Status -> grpc::Status (the codes share their numbering), and the one
// way a unary gRPC method hands a query-layer answer back.

#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/support/status.h"

namespace fleetprof {

inline grpc::Status ToGrpcStatus(const absl::Status& s) {
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

// Moves a successful `result` into `*response`; else returns its status.
template <typename T>
grpc::Status Reply(absl::StatusOr<T> result, T* response) {
  if (!result.ok()) return ToGrpcStatus(result.status());
  *response = *std::move(result);
  return grpc::Status::OK;
}

}  // namespace fleetprof
