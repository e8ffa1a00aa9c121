#include "server/server_flags.h"

#include "absl/strings/str_cat.h"
#include "auth/exposure.h"
#include "common/flags.h"
#include "common/operator_file.h"
#include "common/runtime.h"

namespace fleetprof {

void SecurityFlags::AddFlags(FlagSet* flags) {
  flags->AddString("auth_tokens_file", &auth_tokens_file,
                   "principals, one per line: SHA256-OF-TOKEN SCOPES NAME (reloaded on SIGHUP); empty: no authentication");
  flags->AddString("tls_cert", &tls_cert, "PEM certificate: gRPC and HTTP speak TLS (with --tls_key)");
  flags->AddString("tls_key", &tls_key, "PEM private key of --tls_cert");
  flags->AddString("tls_client_ca", &tls_client_ca, "PEM CA: clients must present a certificate it signed (mTLS)");
  flags->AddBool("insecure", &insecure, "allow a non-loopback listener without tokens, or with tokens but without TLS");
}

void ServerFlags::AddFlags(FlagSet* flags) {
  flags->AddString("grpc_addr", &grpc_addr, "gRPC listen address (ingest, query, agents)");
  flags->AddString("data_dir", &data_dir, "RocksDB folder (a cluster replica: its local cache only)");
  flags->AddString("ready_file", &ready_file, "write {\"grpc\":…,\"http\":…} here once listening (for scripts and tests)");
  flags->AddString("log_level", &log_level, "trace, debug, info, warn or error");
  flags->AddInt("max_open_files", &max_open_files,
                "database files kept open at once (at least 20; -1: all, RocksDB's default)");
  flags->AddInt("max_rpc_threads", &max_rpc_threads,
                "gRPC calls served at once, agent streams included (more: RESOURCE_EXHAUSTED)");
  flags->AddInt("query_workers", &query_workers,
                "threads that answer gRPC queries (the operation table's unary methods); more calls wait, up to "
                "--max_rpc_threads in all, then RESOURCE_EXHAUSTED");
  flags->AddInt("heartbeat_ms", &heartbeat_ms, "heartbeat interval asked of agents");
  security.AddFlags(flags);
  http.AddFlags(flags);
  ingest.AddFlags(flags);
  agents.AddFlags(flags);
  retention.AddFlags(flags);
  cluster.AddFlags(flags);
}

absl::StatusOr<TlsPem> ServerFlags::Check() const {
  for (absl::Status s : {CheckFlagRange("max_rpc_threads", max_rpc_threads, 16, 1'000'000),
                         CheckFlagRange("query_workers", query_workers, 1, 256),
                         CheckFlagRange("heartbeat_ms", heartbeat_ms, 100, 3'600'000),
                         http.Validate(), ingest.Limits().status(), agents.Limits().status(),
                         retention.Policy().status(), cluster.Validate()}) {
    if (!s.ok()) return s;
  }
  if (cluster.replica() && retention.max_disk_mb > 0) {
    // A replica's profiles live in the object store; its disk holds only a cache that bounds
    // itself. Bounding the cluster's bytes is the object store's lifecycle rules' job.
    return absl::InvalidArgumentError(
        "--max_disk_mb bounds the embedded store's folder; a replica keeps only a cache on disk (bounded by "
        "--cache_mb): bound the cluster's profiles with --retention_days (or the bucket's lifecycle rules)");
  }
  if (max_open_files != -1 && max_open_files < 20) {
    return absl::InvalidArgumentError(absl::StrCat("--max_open_files=", max_open_files, " must be at least 20 (or -1)"));
  }
  if (security.tls_cert.empty() != security.tls_key.empty()) {
    return absl::InvalidArgumentError("--tls_cert and --tls_key go together");
  }
  if (!security.tls_client_ca.empty() && security.tls_cert.empty()) {
    return absl::InvalidArgumentError("--tls_client_ca (mTLS) needs --tls_cert and --tls_key");
  }
  TlsPem pem;
  for (auto [path, out] : {std::pair{&security.tls_cert, &pem.cert}, {&security.tls_key, &pem.key},
                           {&security.tls_client_ca, &pem.client_ca}}) {
    if (path->empty()) continue;
    auto text = ReadOperatorFile({.what = "TLS file", .secret = out == &pem.key}, *path);
    if (!text.ok()) return text.status();
    if (text->empty()) return absl::InvalidArgumentError(absl::StrCat("TLS file ", *path, " is empty"));
    *out = *std::move(text);
  }
  ListenerSecurity exposure;
  exposure.tokens = !security.auth_tokens_file.empty();
  exposure.tls = !security.tls_cert.empty();
  exposure.insecure = security.insecure;
  if (absl::Status s = CheckExposure("grpc_addr", grpc_addr, exposure); !s.ok()) return s;
  if (absl::Status s = CheckExposure("http_addr", http.http_addr, exposure); !s.ok()) return s;
  return pem;
}

}  // namespace fleetprof
