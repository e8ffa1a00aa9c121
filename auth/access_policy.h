#pragma once
// Which scope each operation needs: every gRPC method by its full name and every HTTP route,
// in one table each. A gRPC method missing from the table is refused for every caller, so
// a new RPC cannot be served before someone decides who may call it.

#include <optional>
#include <string_view>

#include "absl/status/statusor.h"
#include "auth/scopes.h"

namespace fleetprof {

struct AccessRule {
  bool is_public = false;  // no token needed (health checks, the web app's static files)
  Scope scope = Scope::kAdmin;
};

// "/fleetprof.v1.QueryService/ListProfiles" → read, …; PERMISSION_DENIED for a method the
// table does not know.
absl::StatusOr<AccessRule> RuleForGrpcMethod(std::string_view full_method);

// HTTP: /api/… reads need read, POST /api/v1/captures capture, DELETE admin, any other
// write admin; /metrics read; /healthz and the web app are public.
AccessRule RuleForHttp(std::string_view method, std::string_view path);

}  // namespace fleetprof
