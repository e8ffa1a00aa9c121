#pragma once
// The gRPC edge of the access check. A server interceptor sees every call's method name and
// metadata before the handler runs, asks the AccessGuard with the method's rule
// (api/access_policy.h), and keeps the answer for the call's lifetime; each handler starts
// with Caller(context) and returns its status when refused. Services that cannot ask (gRPC's
// own reflection) are cancelled by the interceptor instead.
//
// The decision is not final: Caller() asks the guard again each time (a token removed by a
// reload answers UNAUTHENTICATED from then on, so a stream that checks each message stops),
// CancelRevoked() cancels every call in progress whose token a reload removed, and a call can
// be given a deadline for a step of its own (an agent stream's hello) that CancelExpired()
// enforces.

#include <atomic>
#include <functional>
#include <memory>
#include <thread>
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

  // The principal the call acts as, or UNAUTHENTICATED / PERMISSION_DENIED, also once its
  // token has been revoked since the call began. A call the interceptor never saw is refused
  // (INTERNAL): fail closed.
  absl::StatusOr<Principal> Caller(const grpc::ServerContextBase* context) const;

  // The call is cancelled by CancelExpired() from `monotonic_ns` on (Clock::MonotonicNanos);
  // 0 takes the deadline away. Bookkeeping of the call, so callable through a const pointer.
  void SetStepDeadline(const grpc::ServerContextBase* context, int64_t monotonic_ns) const;

  // Cancels every call in progress whose principal the guard no longer knows (after a
  // reload) and returns how many.
  int CancelRevoked();
  // Cancels every call whose step deadline is at or before `now_monotonic_ns`; returns how many.
  int CancelExpired(int64_t now_monotonic_ns);

  // Used by the interceptor.
  void Decide(grpc::ServerContextBase* context, const char* method, std::string_view authorization);
  void Forget(const grpc::ServerContextBase* context);

 private:
  struct Call {
    grpc::ServerContextBase* context = nullptr;
    absl::StatusOr<Principal> decision;
    Scope scope = Scope::kAdmin;
    int64_t step_deadline_ns = 0;  // 0: none
  };
  // TryCancel()s the calls `pick` chooses, under mu_: a call's entry is erased (Forget) while
  // its context is destroyed, so a context found here is alive while mu_ is held. gRPC may
  // run a call's callbacks and destroy it inside TryCancel on this very thread; Caller,
  // SetStepDeadline and Forget then see `cancelling_` and do not take mu_ again (CallsLock).
  class CallsLock;
  int CancelWhere(const std::function<bool(const Call&)>& pick);
  // The call's token was valid when it began and a reload has removed it since.
  bool Revoked(const Call& call) const;

  const AccessGuard* guard_;
  mutable absl::Mutex mu_;
  mutable absl::flat_hash_map<const grpc::ServerContextBase*, Call> calls_ ABSL_GUARDED_BY(mu_);
  mutable std::atomic<std::thread::id> cancelling_{};  // the thread inside CancelWhere, holding mu_
};

}  // namespace fleetprof
