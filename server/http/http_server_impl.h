#pragma once
// Inside HttpServer (http_server.h): the event loop, the workers, the routes and the table of
// open connections. Only http_server.cc includes this (and with it asio and Beast), so the
// rest of the server compiles without them.

#include <atomic>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "boost/asio/io_context.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/ssl/context.hpp"
#include "server/http/http_server.h"

namespace fleetprof {

// What the table of open connections needs of one: whether it is waiting for a request
// (idle, or sending its header slowly) and since when, and a way to close it.
class HttpConnectionBase {
 public:
  virtual ~HttpConnectionBase() = default;
  // Closes the connection if it is still waiting for a request (on its own strand).
  virtual void CloseIfWaiting() = 0;
  std::atomic<bool> waiting{true};
  std::atomic<int64_t> waiting_since_ns{0};
  std::atomic<bool> shedding{false};  // chosen by ShedOne(), its close on the way
};

class HttpServer::Impl {
 public:
  explicit Impl(HttpServerOptions options);

  struct RouteEntry {
    std::string method;
    std::vector<std::string> segments;  // "*" matches any one non-empty segment
    bool rest = false;                  // the pattern ended in "**"
    Handler handler;
  };

  // Runs the check, the matching route, the fallback or the 404, catching what a handler throws.
  HttpResponse Handle(const HttpRequest& request) const;

  // The table of open connections: Register() when accepted, the returned handle's
  // destruction unregisters. At the cap, ShedOne() closes the one waiting longest.
  using Registration = std::list<std::weak_ptr<HttpConnectionBase>>::iterator;
  Registration Register(const std::shared_ptr<HttpConnectionBase>& connection);
  void Unregister(Registration registration);
  bool ShedOne();  // false when no connection is waiting
  int64_t open() const;

  const HttpServerOptions options;
  std::vector<RouteEntry> routes;
  Handler fallback;
  RequestCheck check;
  std::atomic<bool> stopping{false};
  std::atomic<int64_t> shed{0};

  // Declared before the loop: connections still queued there unregister while they are
  // destroyed.
  mutable absl::Mutex mu;
  std::list<std::weak_ptr<HttpConnectionBase>> connections ABSL_GUARDED_BY(mu);
  int64_t open_count ABSL_GUARDED_BY(mu) = 0;

  boost::asio::io_context loop;
  std::optional<boost::asio::ssl::context> tls;
  std::optional<boost::asio::ip::tcp::acceptor> acceptor;
  std::vector<std::thread> loop_threads;  // `threads` of them: reads, writes, TLS and handlers
  bool started = false;
};

}  // namespace fleetprof
