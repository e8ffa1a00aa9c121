#include "server/http/http_api.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "httplib.h"

namespace fleetprof {
namespace {

constexpr size_t kFilePieceBytes = 1 << 20;

// One /api/ request through the binder, and its answer back into httplib's response. A file
// is streamed in 1 MiB pieces as it is read or produced.
void ServeApi(const HttpBinder* api, const httplib::Request& req, httplib::Response& res) {
  const size_t q = req.target.find('?');
  const absl::string_view raw_query =
      q == std::string::npos ? absl::string_view() : absl::string_view(req.target).substr(q + 1);
  HttpAnswer answer = api->Serve(HttpCall{req.method, req.path, raw_query, req.body});
  res.status = answer.status;
  if (answer.file == nullptr) {
    res.body = std::move(answer.body);  // moved in: set_content() would copy a whole summary
    res.set_header("Content-Type", answer.content_type);
    return;
  }
  res.set_header("Content-Disposition", absl::StrCat("attachment; filename=\"", answer.file_name, "\""));
  std::shared_ptr<analysis::ByteSource> source = std::move(answer.file);
  auto buffer = std::make_shared<std::string>(kFilePieceBytes, '\0');
  res.set_chunked_content_provider(answer.content_type, [source, buffer](size_t, httplib::DataSink& sink) {
    auto n = source->Read(buffer->data(), buffer->size());
    if (!n.ok()) return false;  // the connection is cut: never a short file that looks whole
    if (*n == 0) {
      sink.done();
      return true;
    }
    return sink.write(buffer->data(), *n);
  });
}

}  // namespace

void RegisterHttpApi(HttpServer& server, const HttpApiBackends& backends) {
  httplib::Server& routes = server.routes();
  const HttpApiBackends b = backends;
  routes.Get("/healthz", [b](const httplib::Request&, httplib::Response& res) {
    const std::string reason = b.not_serving ? b.not_serving() : "";
    res.status = reason.empty() ? 200 : 503;
    res.set_content(reason.empty() ? "ok\n" : reason + "\n", "text/plain");
  });
  routes.Get("/metrics", [b](const httplib::Request&, httplib::Response& res) {
    res.set_content(b.metrics_text(), "text/plain; version=0.0.4; charset=utf-8");
  });
  const HttpBinder* api = b.api;
  const auto serve = [api](const httplib::Request& req, httplib::Response& res) { ServeApi(api, req, res); };
  routes.Get("/api/.*", serve);
  routes.Post("/api/.*", serve);
  routes.Delete("/api/.*", serve);
}

}  // namespace fleetprof
