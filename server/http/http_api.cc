#include "server/http/http_api.h"

#include "absl/strings/str_cat.h"

namespace fleetprof {
namespace {

// One /api/ request through the binder, and its answer back. A file goes out as a stream,
// read piece by piece as it is sent.
void ServeApi(const HttpBinder* api, const HttpRequest& req, HttpResponse& res) {
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
    std::string text = reason.empty() ? "ok\n" : reason + "\n";
    if (const std::string warnings = b.warnings ? b.warnings() : ""; !warnings.empty()) {
      absl::StrAppend(&text, "warning: ", warnings, "\n");
    }
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
