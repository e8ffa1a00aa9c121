#include "server/http/web_ui.h"

#include "absl/strings/str_cat.h"
#include "httplib.h"
#include "api/http_status.h"
#include "server/http/web_assets.h"

namespace fleetprof {
namespace {

const WebAsset* FindAsset(std::string_view name) {
  for (const WebAsset& asset : WebAssets()) {
    if (asset.name == name) return &asset;
  }
  return nullptr;
}

void SetSecurityHeaders(httplib::Response& res) {
  res.set_header("Content-Security-Policy",
                 "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                 "connect-src 'self'; "
                 "frame-ancestors 'none'; base-uri 'none'; form-action 'self'");
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Referrer-Policy", "no-referrer");
}

void Serve(const WebAsset& asset, httplib::Response& res) {
  SetSecurityHeaders(res);
  // Assets change with the binary; "no-cache" revalidates instead of serving a stale app.
  res.set_header("Cache-Control", "no-cache");
  res.set_content(asset.data.data(), asset.data.size(), std::string(asset.content_type));
}

}  // namespace

void RegisterWebUi(HttpServer& server) {
  httplib::Server& routes = server.routes();
  const auto index = [](const httplib::Request&, httplib::Response& res) {
    const WebAsset* page = FindAsset("index.html");
    if (page == nullptr) {
      res.status = 500;
      res.set_content(HttpErrorJson("INTERNAL", "this build has no web app"), "application/json");
      return;
    }
    Serve(*page, res);
  };
  for (const char* path : {"/", "/profiles", R"(/profiles/[^/]+)", R"(/profiles/[^/]+/trace)", "/compare",
                           R"(/jobs/[^/]+)", "/fleet", "/captures"}) {
    routes.Get(path, index);
  }
  routes.Get(R"(/assets/([A-Za-z0-9_.-]+))", [](const httplib::Request& req, httplib::Response& res) {
    const WebAsset* asset = FindAsset(std::string(req.matches[1]));
    if (asset == nullptr || asset->name == "index.html") {
      res.status = 404;
      res.set_content(HttpErrorJson("NOT_FOUND", absl::StrCat("no asset ", std::string(req.matches[1]))),
                      "application/json");
      return;
    }
    Serve(*asset, res);
  });
  // Anything else: a browser gets the app's own "no such page" view (with status 404), so a
  // mistyped link still has a way back; API clients get the JSON error of the error handler.
  routes.Get(".*", [index](const httplib::Request& req, httplib::Response& res) {
    const bool api = req.path.rfind("/api/", 0) == 0;
    if (!api && req.get_header_value("Accept").find("text/html") != std::string::npos) {
      index(req, res);
    }
    res.status = 404;
  });
}

}  // namespace fleetprof
