#pragma once
// absl::Status -> grpc::Status; the codes share their numbering.

#include <string>

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace fleetprof {

inline grpc::Status ToGrpcStatus(const absl::Status& s) {
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

}  // namespace fleetprof
