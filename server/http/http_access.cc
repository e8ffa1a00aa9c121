#include "server/http/http_access.h"

#include <utility>

#include "api/access_policy.h"
#include "api/api_catalog.h"
#include "api/http_status.h"

namespace fleetprof {
namespace {

// A Connect call (api/api_catalog.h) hears the refusal in Connect's error format, the rest in
// the API's.
bool Refuse(const HttpRequest& req, const absl::Status& status, HttpResponse& res) {
  res.status = HttpStatusFor(status.code());
  if (res.status == 401) res.SetHeader("WWW-Authenticate", "Bearer realm=\"fleetprof\"");
  const bool connect = req.method == "POST" && ApiCatalog::Get().FindConnectMethod(req.path) != nullptr;
  res.SetContent(connect ? ConnectErrorJson(status) : HttpErrorJson(status), "application/json");
  return true;
}

}  // namespace

void RegisterHttpAccess(HttpServer& server, const AccessGuard* guard, BrowserPolicy browser) {
  browser.tokens = guard->enabled();
  server.set_request_check([guard, browser = std::move(browser)](HttpRequest& req, HttpResponse& res) {
    const AccessRule rule = RuleForHttp(req.method, req.path);
    // Health checks and the web app's files reveal nothing and change nothing; probes call
    // /healthz with whatever Host their orchestrator uses.
    if (rule.is_public) return false;
    BrowserRequest seen;
    seen.method = req.method;
    // A read-only POST (a query with a body) is a read: a page that sends one learns nothing
    // unless the Host rule lets it read the answer.
    seen.is_write = req.method != "GET" && req.method != "HEAD" && rule.scope != Scope::kRead;
    seen.has_body = !req.body.empty();
    seen.content_type = req.Header("Content-Type");
    seen.origin = req.Header("Origin");
    seen.sec_fetch_site = req.Header("Sec-Fetch-Site");
    seen.host = req.Header("Host");
    if (absl::Status s = CheckBrowserRequest(seen, browser); !s.ok()) return Refuse(req, s, res);
    absl::StatusOr<Principal> caller = guard->Authorize(req.Header("Authorization"), rule.scope);
    if (caller.ok()) {
      req.caller = *std::move(caller);
      return false;
    }
    return Refuse(req, caller.status(), res);
  });
}

}  // namespace fleetprof
