// Keepalive on fleetprof's channels (rpc/channel.h): before, nothing pinged, so a stream over a
// link that died without a FIN (a server that froze, a dropped NAT entry) waited forever: the
// agent never noticed its server was gone. A relay that stops passing bytes plays such a link.

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <chrono>
#include <thread>
#include <vector>

#include "fleetprof/v1/capture.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "rpc/channel.h"
#include "tests/loopback_socket.h"

namespace fleetprof {
namespace {

using testing::ConnectToLoopback;
using testing::ListenOnLoopback;

// WatchCapture sends one update, then holds the stream open until the call ends.
class HoldingCaptureService final : public v1::CaptureService::Service {
 public:
  grpc::Status WatchCapture(grpc::ServerContext* context, const v1::GetCaptureRequest*,
                            grpc::ServerWriter<v1::Capture>* writer) override {
    v1::Capture capture;
    capture.set_capture_id("c1");
    writer->Write(capture);
    while (!context->IsCancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return grpc::Status::CANCELLED;
  }
};

// Passes bytes between its clients and `target_port` until Freeze(); from then on it holds
// every connection open and passes nothing, as a dead link does.
class FreezableRelay {
 public:
  explicit FreezableRelay(int target_port) : target_port_(target_port) {
    listen_fd_ = ListenOnLoopback(&port_);
    thread_ = std::thread([this] { Run(); });
  }
  ~FreezableRelay() {
    stop_.store(true);
    thread_.join();
    for (int fd : fds_) ::close(fd);
    if (listen_fd_ >= 0) ::close(listen_fd_);
  }
  int port() const { return port_; }
  void Freeze() { frozen_.store(true); }

 private:
  void Run() {
    std::vector<pollfd> polled;
    std::vector<char> buf(64 << 10);
    while (!stop_.load()) {
      polled.clear();
      polled.push_back({listen_fd_, POLLIN, 0});
      if (!frozen_.load()) {
        for (int fd : fds_) polled.push_back({fd, POLLIN, 0});
      }
      if (::poll(polled.data(), polled.size(), 50) <= 0) continue;
      if (polled[0].revents & POLLIN) {
        const int client = ::accept(listen_fd_, nullptr, nullptr);
        const int upstream = client >= 0 ? ConnectToLoopback(target_port_) : -1;
        if (upstream >= 0) {
          fds_.push_back(client);  // pairs: [2k] client, [2k+1] its upstream
          fds_.push_back(upstream);
        } else if (client >= 0) {
          ::close(client);
        }
      }
      for (size_t i = 1; i < polled.size(); ++i) {
        if (!(polled[i].revents & (POLLIN | POLLHUP))) continue;
        const size_t at = i - 1;
        const int peer = fds_[at ^ 1];
        const ssize_t n = ::read(fds_[at], buf.data(), buf.size());
        if (n <= 0) continue;
        for (ssize_t sent = 0; sent < n;) {
          const ssize_t w = ::write(peer, buf.data() + sent, static_cast<size_t>(n - sent));
          if (w <= 0) break;
          sent += w;
        }
      }
    }
  }

  const int target_port_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::vector<int> fds_;  // the relay thread's, closed when it is done
  std::atomic<bool> frozen_{false};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// The stream's status once its link froze after the first message.
grpc::Status WatchOverAFrozenLink(const Keepalive& keepalive, std::chrono::seconds deadline) {
  HoldingCaptureService service;
  grpc::ServerBuilder builder;
  int server_port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &server_port);
  // This server lets the test's fast pings through (fleetprof-server allows one per 20 s).
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 100);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server) return grpc::Status(grpc::StatusCode::INTERNAL, "the test server did not start");
  FreezableRelay relay(server_port);
  auto stub = v1::CaptureService::NewStub(MakeChannel("127.0.0.1:" + std::to_string(relay.port()), {}, keepalive));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + deadline);
  v1::GetCaptureRequest request;
  auto reader = stub->WatchCapture(&context, request);
  v1::Capture capture;
  if (!reader->Read(&capture)) return grpc::Status(grpc::StatusCode::INTERNAL, "no first message");
  relay.Freeze();
  while (reader->Read(&capture)) {
  }
  grpc::Status status = reader->Finish();
  server->Shutdown(std::chrono::system_clock::now());
  return status;
}

TEST(KeepaliveTest, AStreamOverADeadLinkFailsInsteadOfWaitingForever) {
  // Pings every 500 ms, dead when one is not answered within 500 ms: the stream fails long
  // before its deadline, as UNAVAILABLE (the agent then reconnects).
  grpc::Status status = WatchOverAFrozenLink(Keepalive{500, 500}, std::chrono::seconds(60));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
}

TEST(KeepaliveTest, WithoutPingsTheSameStreamWaitsUntilItsDeadline) {
  // The control: what every channel did before (no keepalive), here with a short deadline.
  grpc::Status status = WatchOverAFrozenLink(Keepalive{INT_MAX, 20'000}, std::chrono::seconds(3));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << status.error_message();
}

}  // namespace
}  // namespace fleetprof
