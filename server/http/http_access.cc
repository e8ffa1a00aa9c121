#include "server/http/http_access.h"

#include "api/access_policy.h"
#include "httplib.h"
#include "api/http_status.h"

namespace fleetprof {

void RegisterHttpAccess(HttpServer& server, const AccessGuard* guard) {
  server.set_request_check([guard](const httplib::Request& req, httplib::Response& res) {
    const AccessRule rule = RuleForHttp(req.method, req.path);
    if (rule.is_public) return false;
    absl::StatusOr<Principal> caller = guard->Authorize(req.get_header_value("Authorization"), rule.scope);
    if (caller.ok()) return false;
    res.status = HttpStatusFor(caller.status().code());
    if (res.status == 401) res.set_header("WWW-Authenticate", "Bearer realm=\"fleetprof\"");
    res.set_content(HttpErrorJson(caller.status()), "application/json");
    return true;
  });
}

}  // namespace fleetprof
