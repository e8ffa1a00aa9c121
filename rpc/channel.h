#pragma once
// How the CLI and the agent reach fleetprof-server: the channel, its TLS and the bearer
// token every call carries (docs/security.md, Tokens and TLS). Both binaries take the same
// flags: --token_file (else $FLEETPROF_TOKEN), --tls_ca, --tls_cert, --tls_key.

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/flags.h"
#include "grpcpp/channel.h"

namespace fleetprof {

struct ClientSecurityFlags {
  std::string token_file;
  std::string tls_ca;    // PEM CA that signed the server's certificate: speak TLS and verify it
  std::string tls_cert;  // PEM client certificate, for servers that require mTLS
  std::string tls_key;
  bool insecure = false;  // allow sending the token in clear text to a non-loopback server
};
void AddClientSecurityFlags(FlagSet& set, ClientSecurityFlags* flags);

// What the flags name, read once at start.
struct ClientSecurity {
  std::string token;  // empty: calls carry no authorization
  std::string ca_pem;
  std::string cert_pem;
  std::string key_pem;
  bool insecure = false;
};
// Who named the files. A user's CLI reads them as they are (their own files, whatever their
// mode). A daemon's flags are its operator's: the agent runs as root, so its token and TLS files
// must pass common/operator_file.h's checks (root's or ours, nobody else may write them), or
// another user who could write one would choose the agent's token or key.
enum class FilesFrom { kUser, kOperator };

// The token in file `path` (surrounding whitespace dropped), named by --`flag` in errors.
absl::StatusOr<std::string> ReadTokenFile(const std::string& flag, const std::string& path,
                                          FilesFrom from = FilesFrom::kUser);

// Reads the files the flags name, and the token from $FLEETPROF_TOKEN when no --token_file
// is given. INVALID_ARGUMENT naming the flag for an unreadable file or an unusable token.
absl::StatusOr<ClientSecurity> LoadClientSecurity(const ClientSecurityFlags& flags, FilesFrom from = FilesFrom::kUser);

// FAILED_PRECONDITION when `security` would send its token in clear text to a server that
// is not on loopback (no --tls_ca), unless --insecure.
absl::Status CheckTokenStaysPrivate(const std::string& address, const ClientSecurity& security);

// Keepalive pings on a channel's calls: a link that died without a FIN (a rebooted server, a
// dropped NAT entry) fails its calls within time + timeout instead of never. The server permits
// one ping per 20 s (server_main.cc).
struct Keepalive {
  int time_ms = 30'000;     // a ping after this long without data
  int timeout_ms = 10'000;  // the link is dead when its ack does not come within this
};

// The replicas a --server value names: "H:P", "H1:P1,H2:P2,…" or "dns:///NAME:PORT" (one entry:
// gRPC resolves every address of the name).
std::vector<std::string> ServerAddresses(const std::string& server);

// A channel to `address` (any --server value above) with fleetprof's message-size limits,
// reconnect backoff and keepalive; TLS when `security` has a CA, and `authorization: Bearer
// TOKEN` on every call when it has a token. Several replicas: the channel uses the first that
// answers and moves to another when it goes away, and a read (every method of scope read) that
// fails UNAVAILABLE is retried, on the next replica, up to 3 times.
std::shared_ptr<grpc::Channel> MakeChannel(const std::string& address, const ClientSecurity& security = {},
                                           const Keepalive& keepalive = {});

}  // namespace fleetprof
