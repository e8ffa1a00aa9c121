#pragma once
// The server's HTTP listener (--http_addr): /metrics, /healthz, the JSON API and the web app
// on one port. A bounded worker pool, bounded request bodies and read/write timeouts, so a
// slow or hostile client cannot pin the server. Routes are added by the modules that own
// them (server/http_api.h, server/web_ui.h) before Start().

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}

namespace fleetprof {

struct HttpServerOptions {
  std::string address = "127.0.0.1:7071";  // host:port; port 0 picks a free one
  int threads = 16;                         // concurrent requests being served
  int64_t max_body_bytes = 1 << 20;         // larger request bodies answer 413
  int timeout_s = 10;                       // read and write timeout per request
  // TLS: with a certificate and key the listener speaks HTTPS only; with a client CA too, a
  // client must present a certificate signed by it (mTLS).
  std::string tls_cert;
  std::string tls_key;
  std::string tls_client_ca;
};

class HttpServer {
 public:
  explicit HttpServer(HttpServerOptions options);
  ~HttpServer();

  // Where routes are registered. REQUIRES: before Start().
  httplib::Server& routes() { return *server_; }
  // Runs before routing on every request (the access check); may answer it. REQUIRES: before Start().
  using RequestCheck = std::function<bool(const httplib::Request&, httplib::Response&)>;  // true: answered
  void set_request_check(RequestCheck check) { check_ = std::move(check); }

  // Binds and starts serving on a thread of its own; returns the bound port.
  absl::StatusOr<int> Start();
  // Stops accepting, finishes the requests in flight, joins the threads.
  void Stop();

 private:
  HttpServerOptions options_;
  std::unique_ptr<httplib::Server> server_;
  RequestCheck check_;
  int listen_socket_ = -1;  // set while binding (see the socket options in the constructor)
  std::thread listener_;
};

}  // namespace fleetprof
