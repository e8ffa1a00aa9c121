#pragma once
// The HTTP/JSON API under /api/v1 (../shared/DESIGN.md, "HTTP"): each route parses its path
// and query parameters into the same request the gRPC method takes, calls the same
// transport-free method (QueryApi, CaptureCoordinator, AgentRegistry) and prints the answer
// with the one JSON writer (proto/proto_json.h) — so the API, gRPC and the CLI's --json agree
// field for field. Errors are {"error":{"code","message"}} with the mapped HTTP status.

#include <functional>

#include "server/agent_registry.h"
#include "server/capture_coordinator.h"
#include "server/capture_scheduler.h"
#include "server/http_server.h"
#include "server/query_api.h"

namespace fleetprof {

struct HttpApiBackends {
  QueryApi* query = nullptr;
  CaptureCoordinator* captures = nullptr;
  CaptureScheduler* schedules = nullptr;
  AgentRegistry* agents = nullptr;
  // Empty while the server serves; else why not ("draining", "storage: …"): /healthz
  // answers 200 "ok" or 503 with the reason.
  std::function<std::string()> not_serving;
  // The Prometheus text of every metric the server exports, for /metrics.
  std::function<std::string()> metrics_text;
};

// Adds /healthz, /metrics and /api/v1/… to `server`.
void RegisterHttpApi(HttpServer& server, const HttpApiBackends& backends);

}  // namespace fleetprof
