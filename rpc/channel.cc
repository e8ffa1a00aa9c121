#include "rpc/channel.h"

#include <arpa/inet.h>
#include <netdb.h>

#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "fleetprof/v1/api_options.pb.h"
#include "google/protobuf/descriptor.h"
#include "proto/api_files.h"
#include "auth/exposure.h"
#include "common/operator_file.h"
#include "common/runtime.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/client_interceptor.h"

namespace fleetprof {
namespace {

constexpr size_t kMaxFileBytes = 1 << 20;

// `secret`: a token or key, which others should not be able to read either (a warning).
absl::StatusOr<std::string> ReadSmallFile(const char* flag, const std::string& path, FilesFrom from, bool secret) {
  if (from == FilesFrom::kOperator) {
    auto text = ReadOperatorFile({.what = absl::StrCat("--", flag), .max_bytes = kMaxFileBytes, .secret = secret}, path);
    if (!text.ok()) return absl::InvalidArgumentError(text.status().message());
    if (text->empty()) return absl::InvalidArgumentError(absl::StrCat("--", flag, " ", path, ": empty"));
    return text;
  }
  auto text = ReadFileUpTo(path, kMaxFileBytes);
  if (!text.ok() || text->empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, " ", path, ": ",
                                                   text.ok() ? "empty" : std::string(text.status().message())));
  }
  return text;
}

// A token travels in a header: printable ASCII without spaces.
absl::Status CheckToken(const std::string& token, const std::string& from) {
  if (token.empty()) return absl::InvalidArgumentError(absl::StrCat(from, " holds no token"));
  for (char c : token) {
    if (c <= ' ' || c > '~') {
      return absl::InvalidArgumentError(absl::StrCat(from, ": a token is printable ASCII without spaces"));
    }
  }
  return absl::OkStatus();
}

class BearerInterceptor : public grpc::experimental::Interceptor {
 public:
  explicit BearerInterceptor(const std::string* header) : header_(header) {}
  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(grpc::experimental::InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
      methods->GetSendInitialMetadata()->emplace("authorization", *header_);
    }
    methods->Proceed();
  }

 private:
  const std::string* header_;
};

// Adds the token to every call. gRPC's own call credentials would refuse a plaintext
// loopback channel, which is where tokens without TLS are allowed.
class BearerInterceptorFactory : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  explicit BearerInterceptorFactory(std::string token) : header_(absl::StrCat("Bearer ", token)) {}
  grpc::experimental::Interceptor* CreateClientInterceptor(grpc::experimental::ClientRpcInfo*) override {
    return new BearerInterceptor(&header_);
  }

 private:
  const std::string header_;
};

}  // namespace

void AddClientSecurityFlags(FlagSet& set, ClientSecurityFlags* flags) {
  set.AddString("token_file", &flags->token_file, "file holding the bearer token (default: $FLEETPROF_TOKEN)");
  set.AddString("tls_ca", &flags->tls_ca, "PEM CA of the server's certificate: connect with TLS and verify it");
  set.AddString("tls_cert", &flags->tls_cert, "PEM client certificate, for a server that requires mTLS");
  set.AddString("tls_key", &flags->tls_key, "PEM private key of --tls_cert");
  set.AddBool("insecure", &flags->insecure, "send the token without TLS even to a server off loopback");
}

absl::Status CheckTokenStaysPrivate(const std::string& server, const ClientSecurity& security) {
  if (security.token.empty() || !security.ca_pem.empty() || security.insecure) return absl::OkStatus();
  std::string address;
  for (const std::string& a : ServerAddresses(server)) {
    const std::string plain = a.starts_with("dns:///") ? a.substr(7) : a;
    if (!IsLoopbackAddress(plain)) address = a;
  }
  if (address.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "refusing to send the token in clear text to ", address,
      ": pass --tls_ca (the CA of the server's certificate), or --insecure to accept that"));
}

std::vector<std::string> ServerAddresses(const std::string& server) {
  std::vector<std::string> out;
  if (server.starts_with("dns:") || server.find(',') == std::string::npos) return {server};
  for (absl::string_view part : absl::StrSplit(server, ',', absl::SkipWhitespace())) {
    out.emplace_back(absl::StripAsciiWhitespace(part));
  }
  return out;
}

absl::StatusOr<std::string> ReadTokenFile(const std::string& flag, const std::string& path, FilesFrom from) {
  auto text = ReadSmallFile(flag.c_str(), path, from, /*secret=*/true);
  if (!text.ok()) return text.status();
  std::string token(absl::StripAsciiWhitespace(*text));
  if (absl::Status s = CheckToken(token, absl::StrCat("--", flag, " ", path)); !s.ok()) return s;
  return token;
}

absl::StatusOr<ClientSecurity> LoadClientSecurity(const ClientSecurityFlags& flags, FilesFrom from) {
  ClientSecurity security;
  security.insecure = flags.insecure;
  if (!flags.token_file.empty()) {
    auto token = ReadTokenFile("token_file", flags.token_file, from);
    if (!token.ok()) return token.status();
    security.token = *std::move(token);
  } else if (const char* env = std::getenv("FLEETPROF_TOKEN"); env != nullptr && *env != '\0') {
    security.token = std::string(absl::StripAsciiWhitespace(env));
    if (absl::Status s = CheckToken(security.token, "$FLEETPROF_TOKEN"); !s.ok()) return s;
  }
  if (flags.tls_cert.empty() != flags.tls_key.empty()) {
    return absl::InvalidArgumentError("--tls_cert and --tls_key go together");
  }
  if (!flags.tls_cert.empty() && flags.tls_ca.empty()) {
    return absl::InvalidArgumentError("--tls_cert needs --tls_ca (the CA that signed the server's certificate)");
  }
  struct File {
    const char* flag;
    const std::string* path;
    std::string* pem;
    bool secret;
  };
  const File files[] = {{"tls_ca", &flags.tls_ca, &security.ca_pem, false},
                        {"tls_cert", &flags.tls_cert, &security.cert_pem, false},
                        {"tls_key", &flags.tls_key, &security.key_pem, true}};
  for (const File& file : files) {
    if (file.path->empty()) continue;
    auto text = ReadSmallFile(file.flag, *file.path, from, file.secret);
    if (!text.ok()) return text.status();
    *file.pem = *std::move(text);
  }
  return security;
}

namespace {

// "H1:P1,H2:P2" as a target gRPC takes: ipv4:A:P,B:P (or ipv6:), the names resolved now, which
// pick_first tries in order. One address or a dns:/// target passes through.
std::string ChannelTarget(const std::string& server) {
  const std::vector<std::string> addresses = ServerAddresses(server);
  if (addresses.size() == 1) return addresses[0];
  std::vector<std::string> v4, v6;
  for (const std::string& address : addresses) {
    const size_t colon = address.rfind(':');
    if (colon == std::string::npos) continue;
    std::string host = address.substr(0, colon);
    const std::string port = address.substr(colon + 1);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0 || found == nullptr) continue;
    char text[INET6_ADDRSTRLEN] = {};
    if (found->ai_family == AF_INET) {
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr, text, sizeof(text));
      v4.push_back(absl::StrCat(text, ":", port));
    } else if (found->ai_family == AF_INET6) {
      inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(found->ai_addr)->sin6_addr, text, sizeof(text));
      v6.push_back(absl::StrCat("[", text, "]:", port));
    }
    freeaddrinfo(found);
  }
  // One family per target (gRPC's rule): IPv4 when there is any.
  if (!v4.empty()) return absl::StrCat("ipv4:", absl::StrJoin(v4, ","));
  if (!v6.empty()) return absl::StrCat("ipv6:", absl::StrJoin(v6, ","));
  return server;  // nothing resolved: gRPC says why on the first call
}

// pick_first over the replicas, and the read methods (scope read in the .proto files) and those
// marked retry_safe retried on UNAVAILABLE: the channel then moves to the next replica.
const std::string& ServiceConfig() {
  static const std::string* config = [] {
    std::vector<std::string> names;
    for (const std::string& file_name : ApiProtoFileNames()) {
      const auto* file = google::protobuf::DescriptorPool::generated_pool()->FindFileByName(file_name);
      if (file == nullptr) continue;
      for (int s = 0; s < file->service_count(); ++s) {
        const auto* service = file->service(s);
        for (int m = 0; m < service->method_count(); ++m) {
          const auto* method = service->method(m);
          const bool safe = method->options().GetExtension(v1::scope) == v1::SCOPE_READ ||
                            method->options().GetExtension(v1::retry_safe);
          if (!safe || method->client_streaming()) continue;
          names.push_back(absl::StrCat(R"({"service":")", service->full_name(), R"(","method":")", method->name(), R"("})"));
        }
      }
    }
    return new std::string(absl::StrCat(
        R"({"loadBalancingConfig":[{"pick_first":{}}],"methodConfig":[{"name":[)", absl::StrJoin(names, ","),
        R"(],"retryPolicy":{"maxAttempts":4,"initialBackoff":"0.2s","maxBackoff":"2s","backoffMultiplier":2,)",
        R"("retryableStatusCodes":["UNAVAILABLE"]}}]})"));
  }();
  return *config;
}

}  // namespace

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& address, const ClientSecurity& security,
                                           const Keepalive& keepalive) {
  grpc::ChannelArguments args;
  args.SetServiceConfigJSON(ServiceConfig());
  args.SetMaxReceiveMessageSize(64 << 20);
  args.SetMaxSendMessageSize(8 << 20);
  // gRPC's own reconnect backoff grows to minutes; an agent should find a restarted server
  // within seconds.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 250);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 250);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 5000);
  // The agent's command stream lives for days: pings find a dead link within 40 s.
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, keepalive.time_ms);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, keepalive.timeout_ms);
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (!security.ca_pem.empty()) {
    grpc::SslCredentialsOptions tls;
    tls.pem_root_certs = security.ca_pem;
    tls.pem_cert_chain = security.cert_pem;
    tls.pem_private_key = security.key_pem;
    credentials = grpc::SslCredentials(tls);
  }
  std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>> interceptors;
  if (!security.token.empty()) interceptors.push_back(std::make_unique<BearerInterceptorFactory>(security.token));
  const std::string target = ChannelTarget(address);
  if (target != address && !security.ca_pem.empty()) {
    // The certificate names the replicas' host, not the addresses resolved here.
    const std::string first = ServerAddresses(address)[0];
    args.SetSslTargetNameOverride(first.substr(0, first.rfind(':')));
  }
  return grpc::experimental::CreateCustomChannelWithInterceptors(target, credentials, args, std::move(interceptors));
}

}  // namespace fleetprof
