#include "server/grpc/grpc_access.h"

#include "absl/strings/match.h"
#include "api/access_policy.h"

namespace fleetprof {
namespace {

class AccessInterceptor : public grpc::experimental::Interceptor {
 public:
  AccessInterceptor(GrpcAccess* access, grpc::experimental::ServerRpcInfo* info) : access_(access), info_(info) {}
  ~AccessInterceptor() override {
    if (decided_) access_->Forget(info_->server_context());
  }

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    using grpc::experimental::InterceptionHookPoints;
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_INITIAL_METADATA)) {
      std::string_view authorization;
      auto* metadata = methods->GetRecvInitialMetadata();
      auto it = metadata->find("authorization");
      if (it != metadata->end()) authorization = std::string_view(it->second.data(), it->second.size());
      access_->Decide(info_->server_context(), info_->method(), authorization);
      decided_ = true;
      // Only our own services ask Caller(); gRPC's are stopped here when refused.
      if (!absl::StartsWith(info_->method(), "/fleetprof.") &&
          !access_->Caller(info_->server_context()).ok()) {
        info_->server_context()->TryCancel();
      }
    }
    methods->Proceed();
  }

 private:
  GrpcAccess* access_;
  grpc::experimental::ServerRpcInfo* info_;
  bool decided_ = false;
};

class AccessInterceptorFactory : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit AccessInterceptorFactory(GrpcAccess* access) : access_(access) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(grpc::experimental::ServerRpcInfo* info) override {
    return new AccessInterceptor(access_, info);
  }

 private:
  GrpcAccess* access_;
};

}  // namespace

std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> GrpcAccess::Interceptors() {
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> factories;
  factories.push_back(std::make_unique<AccessInterceptorFactory>(this));
  return factories;
}

void GrpcAccess::Decide(const grpc::ServerContextBase* context, const char* method, std::string_view authorization) {
  absl::StatusOr<Principal> decision = [&]() -> absl::StatusOr<Principal> {
    absl::StatusOr<AccessRule> rule = RuleForGrpcMethod(method);
    if (!rule.ok()) return rule.status();
    if (rule->is_public) return AnonymousPrincipal();
    return guard_->Authorize(authorization, rule->scope);
  }();
  absl::MutexLock lock(&mu_);
  calls_.insert_or_assign(context, std::move(decision));
}

void GrpcAccess::Forget(const grpc::ServerContextBase* context) {
  absl::MutexLock lock(&mu_);
  calls_.erase(context);
}

absl::StatusOr<Principal> GrpcAccess::Caller(const grpc::ServerContextBase* context) const {
  absl::MutexLock lock(&mu_);
  auto it = calls_.find(context);
  if (it == calls_.end()) return absl::InternalError("the access check did not run for this call");
  return it->second;
}

}  // namespace fleetprof
