#include "server/http/http_server.h"

#include <algorithm>
#include <limits>
#include <utility>

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "api/http_status.h"
#include "boost/asio/steady_timer.hpp"
#include "boost/asio/executor_work_guard.hpp"
#include "common/net_address.h"
#include "common/stopwatch.h"
#include "server/http/http_connection.h"
#include "server/http/http_server_impl.h"
#include "spdlog/spdlog.h"

namespace fleetprof {
namespace {

namespace beast = boost::beast;
namespace net = boost::asio;
using tcp = net::ip::tcp;

std::vector<std::string> Segments(std::string_view path) {
  if (!path.empty() && path.front() == '/') path.remove_prefix(1);
  if (path.empty()) return {};
  std::vector<std::string> out;
  for (absl::string_view part : absl::StrSplit(absl::string_view(path.data(), path.size()), '/')) out.emplace_back(part);
  return out;
}

bool Matches(const HttpServer::Impl::RouteEntry& route, const std::vector<std::string>& path) {
  if (path.size() < route.segments.size() || (!route.rest && path.size() != route.segments.size())) return false;
  for (size_t i = 0; i < route.segments.size(); ++i) {
    const std::string& want = route.segments[i];
    if (want == "*" ? path[i].empty() : want != path[i]) return false;
  }
  return true;
}

// Accepts connections one after another for as long as the server runs.
class Acceptor : public std::enable_shared_from_this<Acceptor> {
 public:
  explicit Acceptor(HttpServer::Impl* server) : server_(server), retry_(server->accept_loop) {}

  void Accept() {
    server_->acceptor->async_accept([self = shared_from_this()](beast::error_code ec, tcp::socket socket) {
      self->OnAccept(ec, std::move(socket));
    });
  }

 private:
  void OnAccept(beast::error_code ec, tcp::socket socket) {
    if (server_->stopping.load() || ec == net::error::operation_aborted) return;
    if (ec) {
      // Out of descriptors and the like: give one back if a client is only waiting, and
      // try again shortly instead of spinning on the listener.
      spdlog::warn("HTTP accept: {}", ec.message());
      server_->ShedOne();
      retry_.expires_after(std::chrono::milliseconds(50));
      retry_.async_wait([self = shared_from_this()](beast::error_code) { self->Accept(); });
      return;
    }
    if (server_->open() >= server_->options.max_connections && !server_->ShedOne()) {
      beast::error_code ignored;
      socket.close(ignored);  // every connection is busy with a request: none can go
    } else {
      socket.set_option(tcp::no_delay(true), ec);  // Nagle plus delayed ACKs cost ~40 ms a request
      Serve(std::move(socket));
    }
    Accept();
  }

  // Moves the accepted socket to the least busy loop and starts the connection there.
  void Serve(tcp::socket accepted) {
    HttpServer::Impl::Loop* loop = server_->LeastBusy();
    beast::error_code ec;
    const auto protocol = server_->acceptor->local_endpoint(ec).protocol();
    const int fd = ec ? -1 : accepted.release(ec);
    if (ec) return;  // `accepted` still owns (and closes) the descriptor
    tcp::socket socket(loop->context);
    socket.assign(protocol, fd, ec);
    if (ec) {
      ::close(fd);
      return;
    }
    if (server_->tls.has_value()) {
      using Stream = beast::ssl_stream<beast::tcp_stream>;
      Start(loop, std::make_shared<http_beast::HttpConnection<Stream>>(
                      server_, loop, Stream(beast::tcp_stream(std::move(socket)), *server_->tls)));
    } else {
      Start(loop, std::make_shared<http_beast::HttpConnection<beast::tcp_stream>>(server_, loop,
                                                                                  beast::tcp_stream(std::move(socket))));
    }
  }

  template <class Connection>
  void Start(HttpServer::Impl::Loop* loop, std::shared_ptr<Connection> connection) {
    connection->SetRegistration(server_->Register(connection));
    net::post(loop->context, [connection = std::move(connection)] { connection->Start(); });
  }

  HttpServer::Impl* server_;
  net::steady_timer retry_;
};

}  // namespace

HttpServer::Impl::Impl(HttpServerOptions options_in) : options(std::move(options_in)) {
  for (int i = 0; i < std::max(1, options.threads); ++i) loops.push_back(std::make_unique<Loop>());
}

HttpServer::Impl::Loop* HttpServer::Impl::LeastBusy() {
  // A handler running this long is a slow one (not a fast one whose thread was preempted):
  // the loop's other connections wait for it, so a new one goes elsewhere while some loop is
  // not in one.
  constexpr int64_t kStuckNs = 100'000'000;
  const int64_t now = http_beast::SteadyNanos();
  Loop* best = nullptr;
  std::pair<bool, int64_t> best_key;
  for (const std::unique_ptr<Loop>& loop : loops) {
    const int64_t since = loop->handling_since_ns.load();
    const std::pair<bool, int64_t> key(since != 0 && now - since > kStuckNs, loop->connections.load());
    if (best == nullptr || key < best_key) {
      best = loop.get();
      best_key = key;
    }
  }
  return best;
}

HttpResponse HttpServer::Impl::Handle(HttpRequest& request) const {
  HttpResponse response;
  try {
    if (check && check(request, response)) return response;
    const std::vector<std::string> path = Segments(request.path);
    for (const RouteEntry& route : routes) {
      if (route.method == request.method && Matches(route, path)) {
        route.handler(request, response);
        return response;
      }
    }
    if (request.method == "GET" && fallback) {
      fallback(request, response);
      return response;
    }
    response.status = 404;
    response.SetContent(HttpErrorJson("NOT_FOUND", absl::StrCat("no such page or API route: ", request.method, " ",
                                                                request.path)),
                        "application/json");
  } catch (const std::exception& e) {
    spdlog::error("HTTP {} {} failed: {}", request.method, request.path, e.what());
    response = HttpResponse();
    response.status = 500;
    response.SetContent(HttpErrorJson("INTERNAL", "internal error; the server log has the details"), "application/json");
  }
  return response;
}

HttpServer::Impl::Registration HttpServer::Impl::Register(const std::shared_ptr<HttpConnectionBase>& connection) {
  absl::MutexLock lock(&mu);
  ++open_count;
  return connections.insert(connections.end(), connection);
}

void HttpServer::Impl::Unregister(Registration registration) {
  absl::MutexLock lock(&mu);
  --open_count;
  connections.erase(registration);
}

std::vector<std::shared_ptr<HttpConnectionBase>> HttpServer::Impl::LiveConnections() {
  std::vector<std::shared_ptr<HttpConnectionBase>> live;
  absl::MutexLock lock(&mu);
  live.reserve(connections.size());
  for (const auto& weak : connections) {
    if (std::shared_ptr<HttpConnectionBase> connection = weak.lock()) live.push_back(std::move(connection));
  }
  return live;
}

bool HttpServer::Impl::ShedOne() {
  // Held outside mu: a connection whose last other reference goes while we look is destroyed
  // when `live` goes, and its destructor unregisters under mu (under mu, that locked it twice).
  const std::vector<std::shared_ptr<HttpConnectionBase>> live = LiveConnections();
  std::shared_ptr<HttpConnectionBase> oldest;
  int64_t since = std::numeric_limits<int64_t>::max();
  for (const std::shared_ptr<HttpConnectionBase>& connection : live) {
    if (!connection->waiting.load() || connection->shedding.load()) continue;
    if (const int64_t t = connection->waiting_since_ns.load(); t < since) {
      since = t;
      oldest = connection;
    }
  }
  if (oldest == nullptr) return false;
  oldest->shedding = true;  // not chosen twice while its close is on the way
  oldest->CloseIfWaiting();
  shed.fetch_add(1);
  return true;
}

int64_t HttpServer::Impl::open() const {
  absl::MutexLock lock(&mu);
  return open_count;
}

HttpServer::HttpServer(HttpServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Route(std::string_view method, std::string pattern, Handler handler) {
  Impl::RouteEntry route;
  route.method = std::string(method);
  route.segments = Segments(pattern);
  if (!route.segments.empty() && route.segments.back() == "**") {
    route.segments.pop_back();
    route.rest = true;
  }
  route.handler = std::move(handler);
  impl_->routes.push_back(std::move(route));
}

void HttpServer::SetFallback(Handler handler) { impl_->fallback = std::move(handler); }

void HttpServer::set_request_check(RequestCheck check) { impl_->check = std::move(check); }

int64_t HttpServer::open_connections() const { return impl_->open(); }

int64_t HttpServer::shed_connections() const { return impl_->shed.load(); }

absl::StatusOr<int> HttpServer::Start() {
  Impl& s = *impl_;
  if (s.started) return absl::FailedPreconditionError("the HTTP server is already started");
  const HttpServerOptions& options = s.options;
  if (!options.tls_cert.empty()) {
    try {
      s.tls.emplace(net::ssl::context::tls_server);
      s.tls->set_options(net::ssl::context::default_workarounds | net::ssl::context::no_sslv2 |
                         net::ssl::context::no_sslv3 | net::ssl::context::no_tlsv1 | net::ssl::context::no_tlsv1_1 |
                         net::ssl::context::single_dh_use);
      s.tls->use_certificate_chain_file(options.tls_cert);
      s.tls->use_private_key_file(options.tls_key, net::ssl::context::pem);
      if (!options.tls_client_ca.empty()) {
        s.tls->load_verify_file(options.tls_client_ca);
        s.tls->set_verify_mode(net::ssl::verify_peer | net::ssl::verify_fail_if_no_peer_cert);
      }
    } catch (const std::exception& e) {
      s.tls.reset();
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot use the TLS files for --http_addr (--tls_cert ", options.tls_cert, ", --tls_key ", options.tls_key,
          options.tls_client_ca.empty() ? "" : ", --tls_client_ca " + options.tls_client_ca,
          "): unreadable, not PEM, or the key does not match the certificate (", e.what(), ")"));
    }
  }
  absl::StatusOr<HostPort> where = ParseHostPort(options.address);
  if (!where.ok()) return absl::InvalidArgumentError(absl::StrCat("--http_addr ", options.address, ": want HOST:PORT"));
  beast::error_code ec;
  tcp::resolver resolver(s.accept_loop);
  const auto found =
      resolver.resolve(where->host, absl::StrCat(where->port), tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (ec || found.empty()) {
    return absl::UnavailableError(absl::StrCat("cannot listen for HTTP on ", options.address, ": ",
                                               ec ? ec.message() : "no such address"));
  }
  s.acceptor.emplace(s.accept_loop);
  const tcp::endpoint endpoint = found.begin()->endpoint();
  // SO_REUSEADDR for a prompt restart; never SO_REUSEPORT, which would let a second process
  // bind the same port and take part of our connections.
  s.acceptor->open(endpoint.protocol(), ec);
  if (!ec) s.acceptor->set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) s.acceptor->bind(endpoint, ec);
  if (!ec) s.acceptor->listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    s.acceptor.reset();
    return absl::UnavailableError(absl::StrCat("cannot listen for HTTP on ", options.address, ": ", ec.message()));
  }
  const int bound = s.acceptor->local_endpoint().port();
  std::make_shared<Acceptor>(&s)->Accept();
  // Each runs until Stop(), with or without connections.
  const auto run = [](net::io_context* context) {
    auto work = net::make_work_guard(*context);
    context->run();
  };
  for (const auto& loop : s.loops) s.threads.emplace_back(run, &loop->context);
  s.threads.emplace_back(run, &s.accept_loop);
  s.started = true;
  return bound;
}

void HttpServer::Stop() {
  Impl& s = *impl_;
  if (!s.started || s.stopping.exchange(true)) return;
  net::post(s.accept_loop, [&s] {
    beast::error_code ignored;
    s.acceptor->close(ignored);
  });
  // Requests being handled still answer (with "Connection: close"); waiting ones go now.
  for (const std::shared_ptr<HttpConnectionBase>& connection : s.LiveConnections()) connection->CloseIfWaiting();
  const Stopwatch closing;
  const int64_t give_up_ms = int64_t{1000} * std::min(s.options.timeout_s, 10);
  while (s.open() > 0 && closing.ElapsedMillis() < give_up_ms) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  s.accept_loop.stop();
  for (const auto& loop : s.loops) loop->context.stop();
  for (std::thread& thread : s.threads) thread.join();
  s.threads.clear();
}

}  // namespace fleetprof
