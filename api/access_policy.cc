#include "api/access_policy.h"

#include <array>
#include <utility>

#include "absl/strings/str_cat.h"
#include "api/api_catalog.h"

namespace fleetprof {
namespace {

constexpr AccessRule kPublic{true, Scope::kRead};
constexpr AccessRule Needs(Scope scope) { return AccessRule{false, scope}; }

// gRPC's own services, which have no .proto of ours to say it. (The server offers
// reflection only while authentication is off: with tokens the schema is the .proto files.)
constexpr std::array<std::pair<std::string_view, AccessRule>, 2> kGrpcServices = {{
    {"/grpc.health.v1.Health/", kPublic},
    {"/grpc.reflection.v1alpha.ServerReflection/", Needs(Scope::kRead)},
}};

}  // namespace

absl::StatusOr<AccessRule> RuleForGrpcMethod(std::string_view full_method) {
  if (const ApiMethod* method = ApiCatalog::Get().FindMethod(absl::string_view(full_method.data(), full_method.size())); method != nullptr) {
    if (method->scope.has_value()) return Needs(*method->scope);
    return absl::PermissionDeniedError(absl::StrCat(
        std::string(full_method), " has no (scope) option in its .proto, so nobody may call it"));
  }
  for (const auto& [prefix, rule] : kGrpcServices) {
    if (full_method.substr(0, prefix.size()) == prefix) return rule;
  }
  return absl::PermissionDeniedError(
      absl::StrCat(std::string(full_method), " is no method of this server's API, so nobody may call it"));
}

AccessRule RuleForHttp(std::string_view method, std::string_view path) {
  if (path == "/metrics") return Needs(Scope::kRead);
  if (method == "POST") {
    // A Connect call: the method's own scope, as on gRPC (the catalog refuses one without).
    if (const ApiMethod* connect = ApiCatalog::Get().FindConnectMethod(absl::string_view(path.data(), path.size()));
        connect != nullptr) {
      return Needs(*connect->scope);
    }
  }
  if (path.substr(0, 5) != "/api/") return kPublic;  // /healthz, the web app and its assets
  if (const ApiRoute* route = ApiCatalog::Get().FindRoute(
          method == "HEAD" ? absl::string_view("GET") : absl::string_view(method.data(), method.size()),
          absl::string_view(path.data(), path.size()));
      route != nullptr) {
    return Needs(*route->method->scope);  // the catalog refuses a route without a scope
  }
  if (method == "GET" || method == "HEAD") return Needs(Scope::kRead);
  return Needs(Scope::kAdmin);  // a write that no route declares
}

}  // namespace fleetprof
