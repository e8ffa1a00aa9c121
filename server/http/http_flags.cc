#include "server/http/http_flags.h"

#include <algorithm>
#include <thread>

#include "absl/strings/str_split.h"
#include "common/flags.h"
#include "common/runtime.h"
#include "spdlog/spdlog.h"

namespace fleetprof {

void HttpFlags::AddFlags(FlagSet* flags) {
  flags->AddString("http_addr", &http_addr,
                   "HTTP listen address: web app at /, JSON API at /api/v1, /metrics, /healthz");
  flags->AddInt("http_threads", &http_threads,
                "HTTP listener's event loops, one thread each = requests handled at once (0: one per core, at "
                "least 16); idle and slow connections hold none");
  flags->AddInt("http_max_body_kb", &http_max_body_kb, "largest HTTP request body, KiB (larger: 413)");
  flags->AddInt("http_timeout_s", &http_timeout_s,
                "HTTP deadline, seconds: for a request's header (from the connection's start or the last answer), "
                "its body, a TLS handshake, each write");
  flags->AddRepeated("http_allowed_hosts", &http_allowed_hosts,
                     "without tokens, host names (comma-separated, repeatable) that HTTP requests may address beyond "
                     "localhost and 127.0.0.1; others get 403 (a web page could otherwise reach this server through a "
                     "name of its own: DNS rebinding)");
  flags->AddInt("http_max_connections", &http_max_connections,
                "HTTP connections open at once; beyond, the one idle longest is closed for the new one");
}

absl::Status HttpFlags::Validate() const {
  for (absl::Status s : {CheckFlagRange("http_threads", http_threads == 0 ? 1 : http_threads, 1, 1024),
                         CheckFlagRange("http_max_body_kb", http_max_body_kb, 1, int64_t{1} << 20),
                         CheckFlagRange("http_timeout_s", http_timeout_s, 1, 3600),
                         CheckFlagRange("http_max_connections", http_max_connections, 1, 1'000'000)}) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<HttpServerOptions> HttpFlags::Options(const std::string& tls_cert, const std::string& tls_key,
                                                     const std::string& tls_client_ca) const {
  if (absl::Status s = Validate(); !s.ok()) return s;
  HttpServerOptions options;
  options.address = http_addr;
  // Handlers run on the loops' threads (no hand-over per request). Loops share no queue, so
  // an idle one costs nothing but its thread; at least 16 (the old listener's threads): a
  // loop's thread that is preempted or in a slow handler delays only that loop's connections,
  // and with 4 loops on a busy 2-core machine the p99 at 16 clients was 1.5-2.6x the old one.
  options.threads = http_threads > 0 ? static_cast<int>(http_threads)
                                     : static_cast<int>(std::max(16u, std::thread::hardware_concurrency()));
  options.max_body_bytes = http_max_body_kb << 10;
  options.timeout_s = static_cast<int>(http_timeout_s);
  // Each connection is a descriptor: keep room under the process's limit for the database,
  // gRPC and the files being uploaded (at the cap, idle connections are shed).
  const int64_t descriptors = RaiseOpenFileLimit();
  options.max_connections =
      static_cast<int>(std::min<int64_t>(http_max_connections, std::max<int64_t>(64, descriptors - 512)));
  if (options.max_connections < http_max_connections) {
    spdlog::warn("--http_max_connections={} lowered to {}: this process may open {} files", http_max_connections,
                 options.max_connections, descriptors);
  }
  options.tls_cert = tls_cert;
  options.tls_key = tls_key;
  options.tls_client_ca = tls_client_ca;
  return options;
}

BrowserPolicy HttpFlags::Browser() const {
  BrowserPolicy browser;
  for (const std::string& list : http_allowed_hosts) {
    for (absl::string_view name : absl::StrSplit(list, ',', absl::SkipWhitespace())) browser.allowed_hosts.emplace_back(name);
  }
  return browser;
}

}  // namespace fleetprof
