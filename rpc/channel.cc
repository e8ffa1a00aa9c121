#include "rpc/channel.h"

#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "auth/exposure.h"
#include "common/runtime.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/client_interceptor.h"

namespace fleetprof {
namespace {

constexpr size_t kMaxFileBytes = 1 << 20;

absl::StatusOr<std::string> ReadSmallFile(const char* flag, const std::string& path) {
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

absl::Status CheckTokenStaysPrivate(const std::string& address, const ClientSecurity& security) {
  if (security.token.empty() || !security.ca_pem.empty() || security.insecure || IsLoopbackAddress(address)) {
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "refusing to send the token in clear text to ", address,
      ": pass --tls_ca (the CA of the server's certificate), or --insecure to accept that"));
}

absl::StatusOr<std::string> ReadTokenFile(const std::string& flag, const std::string& path) {
  auto text = ReadSmallFile(flag.c_str(), path);
  if (!text.ok()) return text.status();
  std::string token(absl::StripAsciiWhitespace(*text));
  if (absl::Status s = CheckToken(token, absl::StrCat("--", flag, " ", path)); !s.ok()) return s;
  return token;
}

absl::StatusOr<ClientSecurity> LoadClientSecurity(const ClientSecurityFlags& flags) {
  ClientSecurity security;
  security.insecure = flags.insecure;
  if (!flags.token_file.empty()) {
    auto token = ReadTokenFile("token_file", flags.token_file);
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
  const std::pair<const char*, std::pair<const std::string*, std::string*>> files[] = {
      {"tls_ca", {&flags.tls_ca, &security.ca_pem}},
      {"tls_cert", {&flags.tls_cert, &security.cert_pem}},
      {"tls_key", {&flags.tls_key, &security.key_pem}}};
  for (const auto& [flag, paths] : files) {
    if (paths.first->empty()) continue;
    auto text = ReadSmallFile(flag, *paths.first);
    if (!text.ok()) return text.status();
    *paths.second = *std::move(text);
  }
  return security;
}

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& address, const ClientSecurity& security,
                                           const Keepalive& keepalive) {
  grpc::ChannelArguments args;
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
  return grpc::experimental::CreateCustomChannelWithInterceptors(address, credentials, args, std::move(interceptors));
}

}  // namespace fleetprof
