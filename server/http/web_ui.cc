#include "server/http/web_ui.h"

#include "absl/strings/str_cat.h"
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

void SetSecurityHeaders(HttpResponse& res) {
  res.SetHeader("Content-Security-Policy",
                 "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                 "connect-src 'self'; "
                 "frame-ancestors 'none'; base-uri 'none'; form-action 'self'");
  res.SetHeader("X-Content-Type-Options", "nosniff");
  res.SetHeader("Referrer-Policy", "no-referrer");
}

void Serve(const WebAsset& asset, HttpResponse& res) {
  SetSecurityHeaders(res);
  // Assets change with the binary; "no-cache" revalidates instead of serving a stale app.
  res.SetHeader("Cache-Control", "no-cache");
  res.SetContent(std::string(asset.data.data(), asset.data.size()), std::string(asset.content_type));
}

}  // namespace

void RegisterWebUi(HttpServer& server) {
  const auto index = [](const HttpRequest&, HttpResponse& res) {
    const WebAsset* page = FindAsset("index.html");
    if (page == nullptr) {
      res.status = 500;
      res.SetContent(HttpErrorJson("INTERNAL", "this build has no web app"), "application/json");
      return;
    }
    Serve(*page, res);
  };
  for (const char* path : {"/", "/profiles", "/profiles/*", "/profiles/*/trace", "/compare", "/jobs/*", "/jobs/*/trace", "/fleet",
                           "/captures"}) {
    server.Route("GET", path, index);
  }
  server.Route("GET", "/assets/*", [](const HttpRequest& req, HttpResponse& res) {
    const std::string name = req.path.substr(req.path.rfind('/') + 1);
    const WebAsset* asset = FindAsset(name);
    if (asset == nullptr || asset->name == "index.html") {
      res.status = 404;
      res.SetContent(HttpErrorJson("NOT_FOUND", absl::StrCat("no asset ", name)), "application/json");
      return;
    }
    Serve(*asset, res);
  });
  // Anything else: a browser gets the app's own "no such page" view (with status 404), so a
  // mistyped link still has a way back; API clients get the JSON error.
  server.SetFallback([index](const HttpRequest& req, HttpResponse& res) {
    const bool api = req.path.rfind("/api/", 0) == 0;
    if (!api && req.Header("Accept").find("text/html") != std::string_view::npos) {
      index(req, res);
    } else {
      res.SetContent(HttpErrorJson("NOT_FOUND", absl::StrCat("no such page or API route: ", req.method, " ", req.path)),
                     "application/json");
    }
    res.status = 404;
  });
}

}  // namespace fleetprof
