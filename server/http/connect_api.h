#pragma once
// The Connect protocol's unary calls on the HTTP listener, for the services whose .proto says
// (connect) (api/api_catalog.h): Pyroscope's query API, which Grafana's core Pyroscope data
// source speaks. POST /<package>.<Service>/<Method> with Content-Type application/json (proto3
// JSON; names in lowerCamelCase or as declared, unknown fields ignored) or application/proto
// (binary); the answer comes in the request's encoding. Errors are Connect's
// {"code":"invalid_argument","message":"…"} with the mapped HTTP status (api/http_status.h);
// another content type is 415, a method the service does not declare `unimplemented`. The
// operations are the ones gRPC and /api/ serve (api/operations.h); the access check runs
// before, as for every route (http_access.h).

#include "api/api_catalog.h"
#include "api/operations.h"
#include "server/http/http_server.h"

namespace fleetprof {

// Adds POST /<service>/* for each Connect service of `catalog`. Both must outlive `server`.
// REQUIRES: before server.Start().
void RegisterConnectApi(HttpServer& server, const ApiCatalog* catalog, const Operations* operations);

}  // namespace fleetprof
