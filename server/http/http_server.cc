#include "server/http/http_server.h"

#include <sys/socket.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "httplib.h"
#include "proto/proto_json.h"
#include "api/http_status.h"
#include "spdlog/spdlog.h"

namespace fleetprof {

namespace {

std::unique_ptr<httplib::Server> MakeServer(const HttpServerOptions& options) {
  if (options.tls_cert.empty()) return std::make_unique<httplib::Server>();
  return std::make_unique<httplib::SSLServer>(
      options.tls_cert.c_str(), options.tls_key.c_str(),
      options.tls_client_ca.empty() ? nullptr : options.tls_client_ca.c_str());
}

}  // namespace

HttpServer::HttpServer(HttpServerOptions options)
    : options_(std::move(options)), server_(MakeServer(options_)) {
  const int threads = std::max(1, options_.threads);
  server_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  server_->set_payload_max_length(options_.max_body_bytes);
  server_->set_read_timeout(options_.timeout_s, 0);
  server_->set_write_timeout(options_.timeout_s, 0);
  // Responses go out as header and body writes; without NODELAY, Nagle plus delayed ACKs add
  // ~40 ms to every keep-alive request.
  server_->set_tcp_nodelay(true);
  // cpp-httplib's default socket options set SO_REUSEPORT, which would let a second process
  // bind the same port and take part of our connections; SO_REUSEADDR alone still allows a
  // prompt restart. The listening socket is kept for the backlog below.
  server_->set_socket_options([this](int sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    listen_socket_ = sock;
  });
  server_->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    // Debian's cpp-httplib answers "Accept-Encoding: br" (every browser) with Brotli at its
    // slowest quality: 4 MB of JSON took 14 s. gzip does the same job in milliseconds, so the
    // request is read as if it had not offered br. The request object is ours to edit: httplib
    // hands it over as const only by its handler signature.
    auto& headers = const_cast<httplib::Request&>(req).headers;
    for (auto it = headers.find("Accept-Encoding"); it != headers.end() && it->first == "Accept-Encoding"; ++it) {
      std::string& value = it->second;
      for (size_t at; (at = value.find("br")) != std::string::npos;) value.replace(at, 2, "identity");
    }
    if (check_ && check_(req, res)) return httplib::Server::HandlerResponse::Handled;
    return httplib::Server::HandlerResponse::Unhandled;
  });
  server_->set_keep_alive_timeout(5);
  server_->set_keep_alive_max_count(1000);
  // Every error without a body of its own (no route, body too large, bad request line) gets
  // the API's JSON error shape, so clients never have to parse two kinds of failure.
  server_->set_error_handler(httplib::Server::HandlerWithResponse(
      [this](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    std::string message;
    switch (res.status) {
      case 404:
        message = absl::StrCat("no such page or API route: ", req.method, " ", req.path);
        break;
      case 413:
        message = absl::StrCat("request body over the limit of ", options_.max_body_bytes, " bytes");
        break;
      default:
        message = absl::StrCat("HTTP ", res.status, " for ", req.method, " ", req.path);
    }
    res.set_content(HttpErrorJson(HttpStatusCodeName(res.status), message), "application/json");
    return httplib::Server::HandlerResponse::Handled;
  }));
  server_->set_exception_handler([](const httplib::Request& req, httplib::Response& res,
                                    std::exception_ptr error) {
    std::string what = "unknown error";
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    spdlog::error("HTTP {} {} failed: {}", req.method, req.path, what);
    res.status = 500;
    res.set_content(HttpErrorJson("INTERNAL", "internal error; the server log has the details"),
                    "application/json");
  });
}

HttpServer::~HttpServer() { Stop(); }

absl::StatusOr<int> HttpServer::Start() {
  if (!server_->is_valid()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot use the TLS files for --http_addr (--tls_cert ", options_.tls_cert, ", --tls_key ",
        options_.tls_key, options_.tls_client_ca.empty() ? "" : ", --tls_client_ca " + options_.tls_client_ca,
        "): unreadable, not PEM, or the key does not match the certificate"));
  }
  const size_t colon = options_.address.rfind(':');
  int port = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(options_.address.substr(colon + 1), &port) ||
      port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("--http_addr ", options_.address, ": want HOST:PORT"));
  }
  std::string host = options_.address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (port == 0) {
    port = server_->bind_to_any_port(host);
    if (port < 0) port = 0;
  } else if (!server_->bind_to_port(host, port)) {
    port = 0;
  }
  if (port == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen for HTTP on ", options_.address));
  }
  // The library listens with a backlog of 5: a burst of new connections (16 dashboard panels
  // at once) overflows it and waits for a 1 s SYN retransmit. Listening again resizes it.
  if (listen_socket_ >= 0) ::listen(listen_socket_, SOMAXCONN);
  listener_ = std::thread([this] { server_->listen_after_bind(); });
  return port;
}

void HttpServer::Stop() {
  if (!listener_.joinable()) return;
  server_->stop();
  listener_.join();
}

}  // namespace fleetprof
