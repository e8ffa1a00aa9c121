#pragma once
// Inside HttpServer (http_server.h): the acceptor, the loops, the routes and the table of open
// connections. Only http_server.cc includes this (and with it asio and Beast), so the rest of
// the server compiles without them.

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
  // Closes the connection if it is still waiting for a request (on its own loop).
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
  HttpResponse Handle(HttpRequest& request) const;

  // The table of open connections: Register() when accepted, the returned handle's
  // destruction unregisters. At the cap, ShedOne() closes the one waiting longest.
  using Registration = std::list<std::weak_ptr<HttpConnectionBase>>::iterator;
  Registration Register(const std::shared_ptr<HttpConnectionBase>& connection);
  void Unregister(Registration registration);
  bool ShedOne();  // false when no connection is waiting
  // Strong references to the open connections, taken under mu and handed out: whoever drops the
  // last one does it with mu free (a connection's destructor unregisters under mu).
  std::vector<std::shared_ptr<HttpConnectionBase>> LiveConnections() ABSL_LOCKS_EXCLUDED(mu);
  int64_t open() const;

  const HttpServerOptions options;
  std::vector<RouteEntry> routes;
  Handler fallback;
  RequestCheck check;
  std::atomic<bool> stopping{false};
  std::atomic<int64_t> shed{0};

  // One event loop with one thread. A connection lives on one loop for its whole life: its
  // reads, its handler and its writes run on that thread, with no hand-over between threads
  // and no queue shared with the other loops.
  struct Loop {
    // Before `context`, so a connection still queued there can count itself out while the
    // context destroys it.
    std::atomic<int64_t> connections{0};
    std::atomic<int64_t> handling_since_ns{0};  // 0: not in a handler now
    boost::asio::io_context context{1};         // one thread runs it
  };
  // Where a new connection goes: not to a loop stuck in a long handler if another will do,
  // then to the one with the fewest connections.
  Loop* LeastBusy();

  // Declared before the loops: connections still queued there unregister while they are
  // destroyed.
  mutable absl::Mutex mu;
  std::list<std::weak_ptr<HttpConnectionBase>> connections ABSL_GUARDED_BY(mu);
  int64_t open_count ABSL_GUARDED_BY(mu) = 0;

  std::vector<std::unique_ptr<Loop>> loops;  // `threads` of them
  // The acceptor's own loop and thread: on a loop that runs handlers, a new connection waited
  // for the handlers queued before its accept.
  boost::asio::io_context accept_loop{1};
  std::optional<boost::asio::ssl::context> tls;
  std::optional<boost::asio::ip::tcp::acceptor> acceptor;
  std::vector<std::thread> threads;  // one per loop, and the acceptor's
  bool started = false;
};

}  // namespace fleetprof
