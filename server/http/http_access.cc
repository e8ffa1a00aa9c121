#include "server/http/http_access.h"

#include "api/access_policy.h"
#include "api/http_status.h"

namespace fleetprof {

void RegisterHttpAccess(HttpServer& server, const AccessGuard* guard) {
  server.set_request_check([guard](const HttpRequest& req, HttpResponse& res) {
    const AccessRule rule = RuleForHttp(req.method, req.path);
    if (rule.is_public) return false;
    absl::StatusOr<Principal> caller = guard->Authorize(req.Header("Authorization"), rule.scope);
    if (caller.ok()) return false;
    res.status = HttpStatusFor(caller.status().code());
    if (res.status == 401) res.SetHeader("WWW-Authenticate", "Bearer realm=\"fleetprof\"");
    res.SetContent(HttpErrorJson(caller.status()), "application/json");
    return true;
  });
}

}  // namespace fleetprof
