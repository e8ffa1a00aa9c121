#pragma once
// The HTTP/JSON API on the server's HTTP listener: /healthz, /metrics, and every /api/v1
// route, which the binder serves from the .proto declarations (api/http_binder.h) — this file
// only carries requests between the listener (http_server.h) and the binder. Errors are
// {"error":{"code","message"}} with the mapped HTTP status.

#include <functional>
#include <string>

#include "api/http_binder.h"
#include "server/http/http_server.h"

namespace fleetprof {

struct HttpApiBackends {
  const HttpBinder* api = nullptr;  // serves /api/…
  // Empty while the server serves; else why not ("draining", "storage: …"): /healthz
  // answers 200 "ok" or 503 with the reason.
  std::function<std::string()> not_serving;
  // Empty, or what an operator should know while the server serves (a refused tokens
  // reload): /healthz stays 200 and adds it as "warning: …" lines.
  std::function<std::string()> warnings;
  // The Prometheus text of every metric the server exports, for /metrics.
  std::function<std::string()> metrics_text;
};

// Adds /healthz, /metrics and /api/… to `server`.
void RegisterHttpApi(HttpServer& server, const HttpApiBackends& backends);

}  // namespace fleetprof
