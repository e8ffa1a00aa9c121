#pragma once
// Which scope each operation needs. fleetprof's own methods and routes carry theirs in the
// .proto beside the `rpc` line (api/api_catalog.h); a method without one is refused for
// every caller, so a new RPC cannot be served before someone decides who may call it.

#include <optional>
#include <string_view>

#include "absl/status/statusor.h"
#include "auth/scopes.h"

namespace fleetprof {

struct AccessRule {
  bool is_public = false;  // no token needed (health checks, the web app's static files)
  Scope scope = Scope::kAdmin;
};

// "/fleetprof.v1.QueryService/ListProfiles" → read, …; PERMISSION_DENIED for a method that
// has no (scope) option or does not exist.
absl::StatusOr<AccessRule> RuleForGrpcMethod(std::string_view full_method);

// HTTP: a declared /api/ route needs its method's scope; an undeclared GET or HEAD under
// /api/ needs read (and then finds nothing), any other undeclared write admin; /metrics read;
// /healthz and the web app are public; a POST to a Connect method's path
// ("/querier.v1.QuerierService/ProfileTypes") needs that method's scope.
AccessRule RuleForHttp(std::string_view method, std::string_view path);

}  // namespace fleetprof
