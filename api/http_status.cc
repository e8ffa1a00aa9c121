#include "api/http_status.h"

#include "absl/strings/ascii.h"
#include "proto/proto_json.h"

namespace fleetprof {

int HttpStatusFor(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk:
      return 200;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
      return 400;
    case absl::StatusCode::kUnauthenticated:
      return 401;
    case absl::StatusCode::kPermissionDenied:
      return 403;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kAborted:
      return 409;
    case absl::StatusCode::kResourceExhausted:
      return 429;
    case absl::StatusCode::kCancelled:
      return 499;
    case absl::StatusCode::kUnimplemented:
      return 501;
    case absl::StatusCode::kUnavailable:
      return 503;
    case absl::StatusCode::kDeadlineExceeded:
      return 504;
    default:
      return 500;
  }
}

std::string HttpStatusCodeName(int http_status) {
  switch (http_status) {
    case 400:
      return "INVALID_ARGUMENT";
    case 401:
      return "UNAUTHENTICATED";
    case 403:
      return "PERMISSION_DENIED";
    case 404:
      return "NOT_FOUND";
    case 405:
      return "UNIMPLEMENTED";
    case 408:
      return "DEADLINE_EXCEEDED";
    case 413:
    case 414:
    case 429:
      return "RESOURCE_EXHAUSTED";
    case 503:
      return "UNAVAILABLE";
    default:
      return http_status >= 500 ? "INTERNAL" : "INVALID_ARGUMENT";
  }
}

std::string HttpErrorJson(std::string_view code, std::string_view message) {
  std::string out = "{\"error\":{\"code\":";
  AppendJsonString(&out, code);
  out += ",\"message\":";
  AppendJsonString(&out, message);
  out += "}}";
  return out;
}

std::string HttpErrorJson(const absl::Status& status) {
  return HttpErrorJson(absl::StatusCodeToString(status.code()),
                       std::string_view(status.message().data(), status.message().size()));
}

std::string ConnectErrorJson(const absl::Status& status) {
  const std::string code = status.code() == absl::StatusCode::kCancelled
                               ? "canceled"
                               : absl::AsciiStrToLower(absl::StatusCodeToString(status.code()));
  std::string out = "{\"code\":";
  AppendJsonString(&out, code);
  out += ",\"message\":";
  AppendJsonString(&out, std::string_view(status.message().data(), status.message().size()));
  out += "}";
  return out;
}

}  // namespace fleetprof
