#include "api/api_reference.h"

#include <algorithm>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace fleetprof {
namespace {

// "`GET /api/v1/profiles` ?job, label, page_size, *profile_id" (a star: required).
std::string RouteCell(const ApiRoute& route) {
  std::string cell = absl::StrCat("`", route.verb, " ", route.path, "`");
  if (!route.query.empty()) {
    std::vector<std::string> names;
    for (const auto& [name, field] : route.query) {
      const bool required = std::find(route.required.begin(), route.required.end(), name) != route.required.end();
      names.push_back(absl::StrCat(required ? "**" : "", name, required ? "**" : ""));
    }
    absl::StrAppend(&cell, " ?", absl::StrJoin(names, ", "));
  }
  if (route.json_body) absl::StrAppend(&cell, " (JSON body)");
  if (route.file_answer) absl::StrAppend(&cell, " (a file download)");
  return cell;
}

}  // namespace

std::string RenderApiReference(const ApiCatalog& catalog) {
  std::map<const ApiMethod*, std::vector<const ApiRoute*>> routes_of;
  for (const ApiRoute& route : catalog.routes()) routes_of[route.method].push_back(&route);

  std::string out =
      "# API reference\n\n"
      "Generated from the declarations beside each `rpc` in `proto/` (`api/api_catalog.h`) by\n"
      "`scripts/update-api-reference.sh`; a test fails when this page and the catalog differ.\n"
      "Every method answers on gRPC at `/SERVICE/METHOD`; the routes below are the same methods on\n"
      "the HTTP listener (JSON in the CLI's `--json` shapes; [http-api.md](http-api.md) says how\n"
      "routes, errors and tokens work). Query parameters in **bold** are required. A method needs a\n"
      "token with its scope when tokens are on ([security.md](security.md)); one without a scope\n"
      "is not served to anyone.\n";
  std::string service;
  for (const auto& method : catalog.methods()) {
    const auto* descriptor = method->descriptor;
    if (descriptor->service()->full_name() != service) {
      service = descriptor->service()->full_name();
      absl::StrAppend(&out, "\n## ", service, "\n\n");
      if (method->connect) {
        absl::StrAppend(&out, "Also served with the Connect protocol on the HTTP listener, at `/", service,
                        "/METHOD` (JSON or binary protobuf).\n\n");
      }
      absl::StrAppend(&out, "| method | scope | HTTP | request → answer |\n|---|---|---|---|\n");
    }
    std::vector<std::string> routes;
    for (const ApiRoute* route : routes_of[method.get()]) routes.push_back(RouteCell(*route));
    absl::StrAppend(&out, "| `", descriptor->name(), "`", descriptor->client_streaming() ? " (client stream)" : "",
                    descriptor->server_streaming() ? " (server stream)" : "", " | ",
                    method->scope ? absl::StrCat("`", ScopeName(*method->scope), "`") : "none", " | ",
                    routes.empty() ? "—" : absl::StrJoin(routes, "<br>"), " | `", descriptor->input_type()->name(),
                    "` → `", descriptor->output_type()->name(), "` |\n");
  }
  return out;
}

std::string RenderWebRoutes(const ApiCatalog& catalog) {
  std::map<std::string, std::vector<const ApiRoute*>> by_method;  // sorted: a stable file
  for (const ApiRoute& route : catalog.routes()) by_method[route.method->descriptor->name()].push_back(&route);
  std::string out =
      "// Generated from the API's declarations in proto/ (api/api_reference.h) by\n"
      "// scripts/update-api-reference.sh: do not edit. Each method's HTTP routes; core.js's apiPath()\n"
      "// picks the one whose {fields} a call gives.\n"
      "export const ROUTES = {\n";
  for (const auto& [name, routes] : by_method) {
    std::vector<std::string> entries;
    for (const ApiRoute* route : routes) {
      entries.push_back(absl::StrCat("{verb: '", route->verb, "', path: '", route->path, "'}"));
    }
    absl::StrAppend(&out, "  ", name, ": [", absl::StrJoin(entries, ", "), "],\n");
  }
  absl::StrAppend(&out, "};\n");
  return out;
}

}  // namespace fleetprof
