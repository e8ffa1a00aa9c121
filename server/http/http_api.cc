#include "server/http/http_api.h"

#include "absl/strings/str_cat.h"
#include "server/http/http_call_bounds.h"

namespace fleetprof {
namespace {

// One /api/ request through the binder, and its answer back. A file goes out as a stream,
// read piece by piece as it is sent.
void ServeApi(const HttpBinder* api, const HttpRequest& req, HttpResponse& res) {
  const CallBounds bounds = HttpCallBounds(req);
  ScopedCallBounds scope(&bounds);
  HttpAnswer answer = api->Serve(HttpCall{req.method, req.path, req.query, req.body, req.caller});
  res.status = answer.status;
  res.content_type = answer.content_type;
  if (answer.file == nullptr) {
    res.body = std::move(answer.body);
    return;
  }
  res.SetHeader("Content-Disposition", absl::StrCat("attachment; filename=\"", answer.file_name, "\""));
  res.stream = std::move(answer.file);
}

}  // namespace

void RegisterHttpApi(HttpServer& server, const HttpApiBackends& backends) {
  const HttpApiBackends b = backends;
  server.Route("GET", "/healthz", [b](const HttpRequest&, HttpResponse& res) {
    const std::string reason = b.not_serving ? b.not_serving() : "";
    res.status = reason.empty() ? 200 : 503;
    // Still serving but with a warning (a shared store down, a cache put aside): 200, so a
    // load balancer keeps the replica, yet never a bare "ok" a person would take at its word.
    const std::string warnings = b.warnings ? b.warnings() : "";
    std::string text = !reason.empty() ? reason + "\n" : warnings.empty() ? "ok\n" : "degraded\n";
    if (!warnings.empty()) absl::StrAppend(&text, "warning: ", warnings, "\n");
    res.SetContent(std::move(text), "text/plain");
  });
  server.Route("GET", "/metrics", [b](const HttpRequest&, HttpResponse& res) {
    res.SetContent(b.metrics_text(), "text/plain; version=0.0.4; charset=utf-8");
  });
  const HttpBinder* api = b.api;
  const auto serve = [api](const HttpRequest& req, HttpResponse& res) { ServeApi(api, req, res); };
  for (const char* method : {"GET", "POST", "DELETE"}) server.Route(method, "/api/**", serve);
}

}  // namespace fleetprof
