#pragma once
// The server's HTTP listener (--http_addr): /metrics, /healthz, the JSON API and the web app
// on one port. Connections live on event loops (Boost.Beast over asio): a connection that
// is idle, slow to send its request or slow to read its answer holds no thread, only its
// socket and a small buffer. There are `threads` loops of one thread each, and the acceptor
// has a thread of its own; a new connection goes to the least busy loop and stays there, its
// request handled on that loop's thread (no hand-over), so a slow handler delays only the
// connections of its own loop. Limits, each with a clear answer or a close:
//  - the request header must be complete within `timeout_s` of the connection's start (or of
//    the previous answer on a kept-alive one), and within `max_header_bytes` (else 431);
//  - the body within `timeout_s` more and `max_body_bytes` (else 413); each write and the TLS
//    handshake within `timeout_s`;
//  - at most `max_connections` open: at the cap, the connection that has waited longest for
//    its next request is closed for the new one (never "refuse the newcomer", which would
//    let a few idle clients lock everyone out, all from 127.0.0.1).
// Routes are added by the modules that own them (http_api.h, web_ui.h) before Start().

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "server/http/http_message.h"

namespace fleetprof {

struct HttpServerOptions {
  std::string address = "127.0.0.1:7071";  // host:port; port 0 picks a free one
  int threads = 16;                         // loops (one thread each): requests handled at once
  int64_t max_body_bytes = 1 << 20;         // larger request bodies answer 413
  int timeout_s = 10;                       // header, body, handshake and write deadlines
  int max_connections = 4096;               // open at once (idle ones are shed beyond)
  int64_t max_header_bytes = 16 << 10;      // the request line and headers together
  // TLS: with a certificate and key the listener speaks HTTPS only; with a client CA too, a
  // client must present a certificate signed by it (mTLS).
  std::string tls_cert;
  std::string tls_key;
  std::string tls_client_ca;
};

class HttpServer {
 public:
  using Handler = std::function<void(const HttpRequest&, HttpResponse&)>;
  // Runs before routing on every request (the access check); true when it answered. It may
  // set the request's `caller` for the routes.
  using RequestCheck = std::function<bool(HttpRequest&, HttpResponse&)>;

  explicit HttpServer(HttpServerOptions options);
  ~HttpServer();  // Stop()s
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Serves `method` requests whose path matches `pattern`: segments that are literal, "*"
  // (any one non-empty segment) or a last "**" (whatever follows). The first match wins.
  // REQUIRES: before Start().
  void Route(std::string_view method, std::string pattern, Handler handler);
  // Answers GET requests that no route matched (else 404 with the API's JSON error).
  void SetFallback(Handler handler);
  void set_request_check(RequestCheck check);

  // Binds and starts serving on threads of its own; returns the bound port.
  absl::StatusOr<int> Start();
  // Stops accepting, lets the requests being handled answer, closes every connection and
  // joins the threads. Safe to call twice, or without Start().
  void Stop();

  // Connections open now, and those closed at the cap so far (for tests and /metrics).
  int64_t open_connections() const;
  int64_t shed_connections() const;

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace fleetprof
