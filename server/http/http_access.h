#pragma once
// The HTTP edge of the access check: before any route runs, the request's method and path
// pick a rule (api/access_policy.h) and its `Authorization` header is checked against it;
// a refused request gets the API's JSON error with 401 or 403 and never reaches a handler.

#include "auth/access_guard.h"
#include "server/http/http_server.h"

namespace fleetprof {

// `guard` must outlive `server`. REQUIRES: before server.Start().
void RegisterHttpAccess(HttpServer& server, const AccessGuard* guard);

}  // namespace fleetprof
