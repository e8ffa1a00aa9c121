#pragma once
// The HTTP edge's flags: the listener's address, threads, limits and deadlines, and the host
// names a browser may use without tokens. They register themselves on the server's FlagSet.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/http/http_access.h"
#include "server/http/http_server.h"

namespace fleetprof {

class FlagSet;

struct HttpFlags {
  std::string http_addr = "127.0.0.1:7071";
  int64_t http_threads = 0;  // 0: one per core, at least 16
  int64_t http_max_body_kb = 1024;
  int64_t http_timeout_s = 10;
  int64_t http_max_connections = 4096;
  std::vector<std::string> http_allowed_hosts;

  void AddFlags(FlagSet* flags);
  // INVALID_ARGUMENT naming a flag out of its range.
  absl::Status Validate() const;
  // The listener's options (TLS files from the security flags); INVALID_ARGUMENT naming a flag
  // out of its range.
  absl::StatusOr<HttpServerOptions> Options(const std::string& tls_cert, const std::string& tls_key,
                                            const std::string& tls_client_ca) const;
  BrowserPolicy Browser() const;
};

}  // namespace fleetprof
