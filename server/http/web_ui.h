#pragma once
// The web app: index.html for every page path (the app routes in the browser, so a deep link
// such as /profiles/ID?table=ops&sort=self_ns opens directly), and /assets/NAME for its files.
// A Content-Security-Policy of 'self' makes "nothing is fetched off the server" a rule the
// browser enforces, not just a habit of the code.

#include "server/http/http_server.h"

namespace fleetprof {

// REQUIRES: registered after every other route; its catch-all answers what they do not.
void RegisterWebUi(HttpServer& server);

}  // namespace fleetprof
