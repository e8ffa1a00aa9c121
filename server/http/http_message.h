#pragma once
// One HTTP request and its answer as the server's route handlers see them: plain structs with
// no HTTP library in them, so handlers (the API adapter, the web app, the access check) do
// not change when the listener does.

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/byte_source.h"
#include "auth/scopes.h"

namespace fleetprof {

struct HttpRequest {
  std::string method;  // "GET", "POST", …; a HEAD request reaches GET routes as "GET"
  std::string target;  // as sent: path and query
  std::string path;    // the target before '?', percent-decoded
  std::string query;   // the target after '?', as sent (the binder decodes it)
  std::vector<std::pair<std::string, std::string>> headers;  // in the order sent
  std::string body;
  // Who the request acts as: set by the server's request check (the access check) before any
  // route runs, so an operation can tell its caller; no scopes where nothing set it.
  Principal caller;
  // The first header of that name (any case), "" when absent.
  std::string_view Header(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // beyond Content-Type/Length
  // When set, the body instead: read to its end and sent in chunks as it is read. A read
  // error cuts the connection, so a client never takes a short file for a whole one.
  std::shared_ptr<analysis::ByteSource> stream;

  void SetHeader(std::string name, std::string value) { headers.emplace_back(std::move(name), std::move(value)); }
  void SetContent(std::string text, std::string type) {
    body = std::move(text);
    content_type = std::move(type);
  }
};

// `path` with every %XX escape decoded (an invalid escape stays as it is, as a '+' does).
std::string DecodeUrlPath(std::string_view path);

}  // namespace fleetprof
