#pragma once
// The HTTP edge of the access check: before any route runs, the request's method and path
// pick a rule (api/access_policy.h); the browser rules (auth/browser_origin.h) and then its
// `Authorization` header are checked against it. A refused request gets the API's JSON error
// (400, 401 or 403) and never reaches a handler.

#include "auth/access_guard.h"
#include "auth/browser_origin.h"
#include "server/http/http_server.h"

namespace fleetprof {

// `guard` must outlive `server`; `browser.tokens` is taken from `guard`.
// REQUIRES: before server.Start().
void RegisterHttpAccess(HttpServer& server, const AccessGuard* guard, BrowserPolicy browser);

}  // namespace fleetprof
