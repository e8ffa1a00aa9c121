#pragma once
// The gRPC edge of the access check. A server interceptor sees every call's method name and
// metadata before the handler runs, asks the AccessGuard with the method's rule
// (api/access_policy.h), and keeps the answer for the call's lifetime; each handler starts
// with Caller(context) and returns its status when refused. Services that cannot ask (gRPC's
// own reflection) are cancelled by the interceptor instead.

#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "auth/access_guard.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/server_interceptor.h"

namespace fleetprof {

class GrpcAccess {
 public:
  // `guard` must outlive this object.
  explicit GrpcAccess(const AccessGuard* guard) : guard_(guard) {}

  // For ServerBuilder::experimental().SetInterceptorCreators().
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> Interceptors();

  // The principal the call acts as, or UNAUTHENTICATED / PERMISSION_DENIED. A call the
  // interceptor never saw is refused (INTERNAL): fail closed.
  absl::StatusOr<Principal> Caller(const grpc::ServerContextBase* context) const;

  // Used by the interceptor.
  void Decide(const grpc::ServerContextBase* context, const char* method, std::string_view authorization);
  void Forget(const grpc::ServerContextBase* context);

 private:
  const AccessGuard* guard_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<const grpc::ServerContextBase*, absl::StatusOr<Principal>> calls_ ABSL_GUARDED_BY(mu_);
};

}  // namespace fleetprof
