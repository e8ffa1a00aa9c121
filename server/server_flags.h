#pragma once
// Every flag of fleetprof-server. Each layer's set registers itself (IngestFlags, AgentFlags,
// RetentionFlags, HttpFlags, TraceLimits); what is left here belongs to the process: its gRPC
// listener, storage, security and logging.

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/cluster_flags.h"
#include "server/fleet/fleet_flags.h"
#include "server/http/http_flags.h"
#include "server/ingest/ingest_flags.h"

namespace fleetprof {

class FlagSet;

struct SecurityFlags {
  std::string auth_tokens_file;
  std::string tls_cert;
  std::string tls_key;
  std::string tls_client_ca;
  bool insecure = false;

  void AddFlags(FlagSet* flags);
};

// The PEM files of the TLS flags, read once at start.
struct TlsPem {
  std::string cert, key, client_ca;
};

struct ServerFlags {
  std::string grpc_addr = "127.0.0.1:7070";
  std::string data_dir = "./var/server";
  std::string ready_file;
  std::string log_level = "info";
  int64_t max_open_files = 512;
  int64_t max_rpc_threads = 2048;
  int64_t query_workers = 8;
  int64_t heartbeat_ms = 2000;
  SecurityFlags security;
  HttpFlags http;
  IngestFlags ingest;
  AgentFlags agents;
  RetentionFlags retention;
  ClusterFlags cluster;

  void AddFlags(FlagSet* flags);
  // INVALID_ARGUMENT naming the first flag out of its range, or a combination the server refuses
  // (TLS files that do not go together or cannot be read, a listener exposed without the
  // protection docs/security.md, Defaults, asks for). Returns the TLS files' contents.
  absl::StatusOr<TlsPem> Check() const;
};

}  // namespace fleetprof
