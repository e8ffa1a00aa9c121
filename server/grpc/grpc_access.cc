#include "server/grpc/grpc_access.h"

#include "absl/strings/str_cat.h"
#include "api/access_policy.h"
#include "api/api_catalog.h"

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
      // Only the services of our .proto files (the catalog's: fleetprof's and the Pyroscope
      // query API) ask Caller(); gRPC's are stopped here when refused.
      if (ApiCatalog::Get().FindMethod(info_->method()) == nullptr && !access_->Caller(info_->server_context()).ok()) {
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

// mu_, unless this thread already holds it inside CancelWhere: gRPC may run a call's
// callbacks (which ask Caller) and destroy it (which calls Forget) inside TryCancel.
class GrpcAccess::CallsLock {
 public:
  explicit CallsLock(const GrpcAccess* access) ABSL_NO_THREAD_SAFETY_ANALYSIS
      : mu_(access->cancelling_.load() == std::this_thread::get_id() ? nullptr : &access->mu_) {
    if (mu_ != nullptr) mu_->Lock();
  }
  ~CallsLock() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    if (mu_ != nullptr) mu_->Unlock();
  }
  CallsLock(const CallsLock&) = delete;
  CallsLock& operator=(const CallsLock&) = delete;

 private:
  absl::Mutex* const mu_;
};

std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> GrpcAccess::Interceptors() {
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> factories;
  factories.push_back(std::make_unique<AccessInterceptorFactory>(this));
  return factories;
}

void GrpcAccess::Decide(grpc::ServerContextBase* context, const char* method, std::string_view authorization)
    ABSL_NO_THREAD_SAFETY_ANALYSIS {
  Call call;
  call.context = context;
  call.decision = [&]() -> absl::StatusOr<Principal> {
    absl::StatusOr<AccessRule> rule = RuleForGrpcMethod(method);
    if (!rule.ok()) return rule.status();
    call.scope = rule->scope;
    if (rule->is_public) return AnonymousPrincipal();
    return guard_->Authorize(authorization, rule->scope);
  }();
  CallsLock lock(this);  // a new call may be started inside TryCancel on the cancelling thread
  calls_.insert_or_assign(context, std::move(call));
}

void GrpcAccess::Forget(const grpc::ServerContextBase* context) ABSL_NO_THREAD_SAFETY_ANALYSIS {
  CallsLock lock(this);
  calls_.erase(context);
}

absl::StatusOr<Principal> GrpcAccess::Caller(const grpc::ServerContextBase* context) const
    ABSL_NO_THREAD_SAFETY_ANALYSIS {
  CallsLock lock(this);
  auto it = calls_.find(context);
  if (it == calls_.end()) return absl::InternalError("the access check did not run for this call");
  const Call& call = it->second;
  if (Revoked(call)) {
    return absl::UnauthenticatedError(
        absl::StrCat("the token of '", call.decision->name, "' was revoked while this call was open"));
  }
  return call.decision;
}

bool GrpcAccess::Revoked(const Call& call) const {
  // Public methods (health checks) act as the anonymous principal, whom no reload revokes.
  return call.decision.ok() && call.decision->authenticated && !guard_->StillValid(*call.decision, call.scope);
}

void GrpcAccess::SetStepDeadline(const grpc::ServerContextBase* context, int64_t monotonic_ns) const
    ABSL_NO_THREAD_SAFETY_ANALYSIS {
  CallsLock lock(this);
  if (auto it = calls_.find(context); it != calls_.end()) it->second.step_deadline_ns = monotonic_ns;
}

int GrpcAccess::CancelRevoked() {
  return CancelWhere([this](const Call& call) { return Revoked(call); });
}

int GrpcAccess::CancelExpired(int64_t now_monotonic_ns) {
  return CancelWhere([now_monotonic_ns](const Call& call) {
    return call.step_deadline_ns != 0 && call.step_deadline_ns <= now_monotonic_ns;
  });
}

int GrpcAccess::CancelWhere(const std::function<bool(const Call&)>& pick) {
  absl::MutexLock lock(&mu_);
  std::vector<const grpc::ServerContextBase*> victims;
  for (auto& [key, call] : calls_) {
    if (pick(call)) victims.push_back(key);
  }
  cancelling_ = std::this_thread::get_id();
  int cancelled = 0;
  for (const grpc::ServerContextBase* key : victims) {
    auto it = calls_.find(key);  // an earlier cancel may have ended and forgotten it
    if (it == calls_.end()) continue;
    it->second.step_deadline_ns = 0;  // once
    grpc::ServerContextBase* context = it->second.context;
    context->TryCancel();
    ++cancelled;
  }
  cancelling_ = std::thread::id();
  return cancelled;
}

}  // namespace fleetprof
