// fleetprof-server: stores every uploaded profile and answers queries over gRPC and HTTP/JSON;
// serves the web app and Prometheus metrics on the HTTP port. The object graph is Server
// (server/server.h); the flags are ServerFlags (server/server_flags.h), each layer's own.

#include <iostream>
#include <memory>

#include "analysis/event_array.h"
#include "auth/access_guard.h"
#include "common/clock.h"
#include "common/flags.h"
#include "common/runtime.h"
#include "server/server.h"
#include "server/server_flags.h"
#include "spdlog/spdlog.h"

namespace fleetprof {
namespace {

constexpr char kUsage[] =
    "fleetprof-server: stores trace profiles and serves queries, the web app and metrics.\n"
    "Usage: fleetprof-server [--grpc_addr=HOST:PORT] [--http_addr=HOST:PORT] [--data_dir=DIR]\n"
    "Port 0 picks a free port; the chosen addresses are logged and written to --ready_file.";

// The principals of --auth_tokens_file; without it, a guard that lets everyone in (loopback only:
// ServerFlags::Check refuses an exposed listener without tokens).
absl::StatusOr<std::unique_ptr<AccessGuard>> LoadGuard(const SecurityFlags& security) {
  if (security.auth_tokens_file.empty()) {
    spdlog::warn("authentication off (no --auth_tokens_file): every client that reaches the listeners may do anything");
    return std::make_unique<AccessGuard>();
  }
  auto guard = AccessGuard::FromTokensFile(security.auth_tokens_file);
  if (guard.ok()) {
    spdlog::info("authentication on: {} principals from {}", (*guard)->principal_count(), security.auth_tokens_file);
  }
  return guard;
}

int Run(const ServerFlags& flags, const TlsPem& pem) {
  auto guard = LoadGuard(flags.security);
  if (!guard.ok()) {
    spdlog::error("{}", std::string(guard.status().message()));
    return 2;
  }
  auto server = Server::Start(flags, pem, *std::move(guard), RealClock());
  if (!server.ok()) {
    spdlog::error("{}", std::string(server.status().message()));
    return 1;
  }
  const int sig = WaitForShutdownSignal([&] { (*server)->ReloadTokens(); });
  spdlog::info("signal {} received: draining", sig);
  (*server)->Drain();
  spdlog::info("fleetprof-server stopped");
  return 0;
}

}  // namespace
}  // namespace fleetprof

int main(int argc, char** argv) {
  fleetprof::TuneMalloc();
  // The event arrays of the last uploads stay mapped for the next ones (event_array.h): upload
  // +index of a 54 MB trace 250 -> 228 ms in alternated runs. As much as malloc keeps at the
  // top of a heap (TuneMalloc).
  fleetprof::analysis::KeepFreedEventMemory(size_t{64} << 20);
  fleetprof::BlockShutdownSignals();
  fleetprof::ServerFlags flags;
  fleetprof::FlagSet set(fleetprof::kUsage);
  flags.AddFlags(&set);
  if (absl::Status s = set.Parse(argc, argv); !s.ok()) {
    std::cerr << "fleetprof-server: " << s.message() << "\n";
    return 2;
  }
  if (set.help_requested()) {
    std::cout << set.HelpText();
    return 0;
  }
  if (!set.positional().empty()) {
    std::cerr << "fleetprof-server: unexpected argument '" << set.positional()[0] << "'\n";
    return 2;
  }
  auto pem = flags.Check();
  if (!pem.ok()) {
    std::cerr << "fleetprof-server: " << pem.status().message() << "\n";
    return 2;
  }
  fleetprof::SetUpLogging("server", flags.log_level);
  return fleetprof::Run(flags, *pem);
}
