#pragma once
// How an absl/gRPC status code reads over HTTP (docs/http-api.md, Errors and limits of the
// listener): one mapping for every route, and the one error body {"error":{"code","message"}}.

#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace fleetprof {

// NOT_FOUND 404, INVALID_ARGUMENT 400, UNAUTHENTICATED 401, PERMISSION_DENIED 403,
// RESOURCE_EXHAUSTED 429, UNAVAILABLE 503, …; anything unexpected 500.
int HttpStatusFor(absl::StatusCode code);
// The code name a bare HTTP error status stands for (404 -> "NOT_FOUND").
std::string HttpStatusCodeName(int http_status);
// {"error":{"code":CODE,"message":MESSAGE}}
std::string HttpErrorJson(std::string_view code, std::string_view message);
std::string HttpErrorJson(const absl::Status& status);
// The Connect protocol's error body, {"code":"invalid_argument","message":MESSAGE} (codes in
// lower case, "canceled" with one l), sent with HttpStatusFor's status: Connect maps codes to
// HTTP statuses as this API does.
std::string ConnectErrorJson(const absl::Status& status);

}  // namespace fleetprof
