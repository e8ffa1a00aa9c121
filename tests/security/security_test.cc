// The security contract end to end (docs/security.md), against the real
// binaries: every RPC and route checked for its scope, node identity, upload ownership,
// TLS and mTLS, and the refusal of exposed listeners.
#include <dirent.h>
#include <signal.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>

#include "api/access_policy.h"
#include "api/api_catalog.h"
#include "auth/token_hash.h"
#include "proto/api_files.h"
#include "fleetprof/v1/agent.grpc.pb.h"
#include "fleetprof/v1/ingest.grpc.pb.h"
#include "google/protobuf/descriptor.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "rpc/channel.h"
#include "tests/e2e/test_cluster.h"
#include "tests/e2e/test_pki.h"
#include "tests/test_support.h"

namespace fleetprof {
namespace {

using testing::CommandResult;
using testing::Eventually;
using testing::RunCommand;
using testing::TestCluster;

constexpr const char* kScopes[] = {"read", "ingest", "capture", "agent", "admin"};

// Writes `token` to its own file (as a user would keep it) and returns the path.
std::string TokenFile(const TestCluster& cluster, const std::string& token) {
  const std::string path = cluster.root() + "/" + token + ".token";
  std::ofstream(path) << token << "\n";
  return path;
}

// One principal per scope ("only_X") and one with every scope but X ("all_but_X"), plus
// agents for nodes n1 and n2 and an operator.
std::string WriteTokensFile(const TestCluster& cluster) {
  std::string text = "# test principals\n";
  for (const char* scope : kScopes) {
    text += Sha256Hex(std::string("only_") + scope) + " " + scope + " only_" + scope + "\n";
    std::string others;
    for (const char* other : kScopes) {
      if (std::string(other) != scope) others += std::string(others.empty() ? "" : ",") + other;
    }
    text += Sha256Hex(std::string("all_but_") + scope) + " " + others + " all_but_" + scope + "\n";
  }
  text += Sha256Hex("agent_n1") + " agent,ingest n1\n";
  text += Sha256Hex("agent_n2") + " agent,ingest n2\n";
  text += Sha256Hex("operator") + " read,capture,ingest ops\n";
  const std::string path = cluster.root() + "/tokens";
  std::ofstream(path) << text;
  return path;
}

// Calls any method as a bidi stream: one empty message, then half-close. The wire format of
// every gRPC call type is the same, so this reaches unary and streaming handlers alike.
class OneMessageCall : public grpc::ClientBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  grpc::Status Run(grpc::GenericStub& stub, const std::string& method, const std::string& token) {
    if (!token.empty()) context_.AddMetadata("authorization", "Bearer " + token);
    context_.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    grpc::Slice empty("");
    request_ = grpc::ByteBuffer(&empty, 1);  // an empty message: a default ByteBuffer is none at all
    stub.PrepareBidiStreamingCall(&context_, method, grpc::StubOptions(), this);
    StartWrite(&request_, grpc::WriteOptions().set_last_message());
    StartRead(&response_);
    StartCall();
    std::unique_lock lock(mu_);
    done_cv_.wait(lock, [this] { return done_; });
    return status_;
  }
  void OnReadDone(bool ok) override {
    if (ok) StartRead(&response_);  // drain (a stream answers more than once)
  }
  void OnDone(const grpc::Status& status) override {
    std::lock_guard lock(mu_);
    status_ = status;
    done_ = true;
    done_cv_.notify_all();
  }

 private:
  grpc::ClientContext context_;
  grpc::ByteBuffer request_;
  grpc::ByteBuffer response_;
  std::mutex mu_;
  std::condition_variable done_cv_;
  bool done_ = false;
  grpc::Status status_;
};

grpc::Status CallWith(grpc::GenericStub& stub, const std::string& method, const std::string& token) {
  OneMessageCall call;
  return call.Run(stub, method, token);
}

// Every method of every service in proto/fleetprof/v1, from the same catalog the server's
// access policy reads: a new RPC in any of those files is walked without editing this test.
std::vector<std::string> AllFleetprofMethods() {
  // Every file in the folder is compiled in (a file left out of proto/CMakeLists.txt would
  // be a service nobody serves).
  std::set<std::string> compiled(ApiProtoFileNames().begin(), ApiProtoFileNames().end());
  const std::string dir = std::string(FLEETPROF_SOURCE_DIR) + "/proto/fleetprof/v1";
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".proto") continue;
    EXPECT_TRUE(compiled.count("fleetprof/v1/" + entry.path().filename().string()))
        << entry.path() << " is not compiled (add it to FLEETPROF_PROTOS in proto/CMakeLists.txt)";
  }
  std::vector<std::string> methods;
  for (const auto& method : ApiCatalog::Get().methods()) methods.push_back(method->grpc_path);
  return methods;
}

// Every /api route the .proto files declare, with a made-up value in each path segment and
// each required query parameter, and every Connect method's path, with the scope its method needs.
struct Route {
  std::string method, path, scope;
};
std::vector<Route> AllHttpRoutes() {
  std::vector<Route> routes = {{"GET", "/metrics", "read"}};  // not an API method, but not public
  for (const ApiRoute& route : ApiCatalog::Get().routes()) {
    std::string path;
    for (const ApiRoute::Segment& segment : route.segments) {
      path += "/" + (segment.field != nullptr ? segment.field->name() + "_1" : segment.literal);
    }
    for (size_t i = 0; i < route.required.size(); ++i) path += (i == 0 ? "?" : "&") + route.required[i] + "=x1";
    routes.push_back({route.verb, path, ScopeName(*route.method->scope)});
  }
  // The Connect methods (Pyroscope's query API) on the same listener, by their paths.
  for (const auto& method : ApiCatalog::Get().methods()) {
    if (method->connect) routes.push_back({"POST", method->grpc_path, ScopeName(*method->scope)});
  }
  return routes;
}

class SecurityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tokens_ = WriteTokensFile(cluster_);
    ASSERT_TRUE(cluster_.StartServer("127.0.0.1:0", {"--auth_tokens_file=" + tokens_})) << cluster_.ServerLog();
  }
  CommandResult Cli(std::vector<std::string> args, const std::string& token) {
    if (!token.empty()) args.push_back("--token_file=" + TokenFile(cluster_, token));
    return cluster_.Cli(args);
  }
  std::shared_ptr<grpc::Channel> Channel() {
    return grpc::CreateChannel(cluster_.grpc_addr(), grpc::InsecureChannelCredentials());
  }
  TestCluster cluster_;
  std::string tokens_;
};

TEST_F(SecurityTest, EveryRpcWantsAKnownTokenWithItsScope) {
  grpc::GenericStub stub(Channel());
  std::vector<std::string> methods = AllFleetprofMethods();
  ASSERT_GE(methods.size(), 15u);
  for (const std::string& method : methods) {
    SCOPED_TRACE(method);
    absl::StatusOr<AccessRule> rule = RuleForGrpcMethod(method);
    ASSERT_TRUE(rule.ok()) << "no access rule: give the method a (scope) option in its .proto";
    ASSERT_FALSE(rule->is_public);
    const std::string scope = ScopeName(rule->scope);
    EXPECT_EQ(CallWith(stub, method, "").error_code(), grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_EQ(CallWith(stub, method, "not-a-token").error_code(), grpc::StatusCode::UNAUTHENTICATED);
    grpc::Status denied = CallWith(stub, method, "all_but_" + scope);
    EXPECT_EQ(denied.error_code(), grpc::StatusCode::PERMISSION_DENIED) << denied.error_message();
    EXPECT_NE(denied.error_message().find("needs '" + scope + "'"), std::string::npos) << denied.error_message();
    grpc::Status allowed = CallWith(stub, method, "only_" + scope);
    EXPECT_NE(allowed.error_code(), grpc::StatusCode::UNAUTHENTICATED) << allowed.error_message();
    EXPECT_NE(allowed.error_code(), grpc::StatusCode::PERMISSION_DENIED) << allowed.error_message();
  }
  // gRPC's health check stays open for probes; reflection is not offered with tokens on.
  EXPECT_EQ(CallWith(stub, "/grpc.health.v1.Health/Check", "").error_code(), grpc::StatusCode::OK);
  EXPECT_NE(CallWith(stub, "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", "").error_code(),
            grpc::StatusCode::OK);
}

TEST_F(SecurityTest, EveryHttpRouteWantsAKnownTokenWithItsScope) {
  httplib::Client http("http://" + cluster_.http_addr());
  const std::vector<Route> routes = AllHttpRoutes();
  ASSERT_GE(routes.size(), 20u);
  const auto send = [&](const Route& r, const std::string& token) {
    httplib::Headers headers;
    if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
    httplib::Result res = r.method == "GET"    ? http.Get(r.path, headers)
                          : r.method == "POST" ? http.Post(r.path, headers, "{\"job\":\"none\"}", "application/json")
                                               : http.Delete(r.path, headers);
    return res ? res->status : -1;
  };
  for (const Route& r : routes) {
    SCOPED_TRACE(r.method + " " + r.path);
    EXPECT_EQ(send(r, ""), 401);
    EXPECT_EQ(send(r, "nope"), 401);
    EXPECT_EQ(send(r, "all_but_" + r.scope), 403);
    const int allowed = send(r, "only_" + r.scope);
    EXPECT_NE(allowed, 401);
    EXPECT_NE(allowed, 403);
  }
  httplib::Result unauthorized = http.Get("/api/v1/profiles");
  ASSERT_TRUE(unauthorized);
  EXPECT_EQ(unauthorized->get_header_value("WWW-Authenticate"), "Bearer realm=\"fleetprof\"");
  EXPECT_NE(unauthorized->body.find("\"code\":\"UNAUTHENTICATED\""), std::string::npos) << unauthorized->body;
  // Probes and the web app itself (which then asks for a token) need none.
  for (const char* open : {"/healthz", "/", "/profiles/p1", "/assets/app.js"}) {
    httplib::Result res = http.Get(open);
    ASSERT_TRUE(res) << open;
    EXPECT_TRUE(res->status == 200 || res->status == 404) << open << " " << res->status;
  }
}

TEST_F(SecurityTest, CliUsesTheTokenFileOrTheEnvironment) {
  CommandResult none = Cli({"profiles", "--json"}, "");
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.err.find("requires a token"), std::string::npos) << none.err;
  CommandResult ok = Cli({"profiles", "--json"}, "only_read");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  CommandResult env = RunCommand({"/usr/bin/env", "FLEETPROF_TOKEN=only_read", testing::BinDir() + "/fleetprof",
                                  "profiles", "--server", cluster_.grpc_addr()});
  EXPECT_EQ(env.exit_code, 0) << env.err;
  // A token never crosses the network in clear text unless the user says so (nothing is sent:
  // the address is unroutable and the CLI refuses before dialing).
  CommandResult exposed = RunCommand({testing::BinDir() + "/fleetprof", "profiles", "--server", "192.0.2.1:7070",
                                      "--token_file", TokenFile(cluster_, "only_read")});
  EXPECT_EQ(exposed.exit_code, 1);
  EXPECT_NE(exposed.err.find("refusing to send the token in clear text to 192.0.2.1:7070"), std::string::npos)
      << exposed.err;
  CommandResult upload = Cli({"upload", testing::CorpusPath("kineto/mi250_rocm62.json.gz"), "--job", "j", "--json"},
                             "only_read");
  EXPECT_EQ(upload.exit_code, 1);
  EXPECT_NE(upload.err.find("needs 'ingest'"), std::string::npos) << upload.err;
}

TEST_F(SecurityTest, AnAgentIsOnlyTheNodeItsTokenNames) {
  FLEETPROF_REQUIRE_PATH(testing::CorpusPath("kineto/mi250_rocm62.json.gz"));
  // n1's agent, with a static XLA target nothing listens on: a capture reaches it and fails there.
  const int n1 = cluster_.StartAgent({"--node=n1", "--token_file=" + TokenFile(cluster_, "agent_n1"),
                                      "--target", "job=j1,xprof=127.0.0.1:1"});
  ASSERT_GE(n1, 0);
  const auto state_of = [&](const std::string& node) {
    CommandResult agents = Cli({"agents", "--json"}, "only_read");
    const size_t at = agents.out.find("\"node\":\"" + node + "\"");
    if (at == std::string::npos) return std::string("absent");
    return agents.out.substr(at, 80).find("\"CONNECTED\"") != std::string::npos ? std::string("CONNECTED")
                                                                                : std::string("other");
  };
  ASSERT_TRUE(Eventually(20, [&] { return state_of("n1") == "CONNECTED"; })) << cluster_.ServerLog();

  // n1's token cannot make an agent n2.
  const int impostor = cluster_.StartAgent({"--node=n2", "--token_file=" + TokenFile(cluster_, "agent_n1")});
  ASSERT_GE(impostor, 0);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  EXPECT_EQ(state_of("n2"), "absent");

  // A stream claiming n1 with another node's credential is refused; the real n1 stays.
  auto stub = v1::AgentService::NewStub(Channel());
  grpc::ClientContext context;
  context.AddMetadata("authorization", "Bearer agent_n2");
  auto stream = stub->Connect(&context);
  v1::AgentMessage hello;
  hello.mutable_hello()->set_node("n1");
  stream->Write(hello);
  stream->WritesDone();
  v1::ServerMessage reply;
  EXPECT_FALSE(stream->Read(&reply));
  grpc::Status refused = stream->Finish();
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::PERMISSION_DENIED) << refused.error_message();
  EXPECT_NE(refused.error_message().find("may not register as node 'n1'"), std::string::npos);
  EXPECT_EQ(state_of("n1"), "CONNECTED");

  // And n1 still gets its capture commands: the target fails on n1 itself.
  CommandResult capture = Cli({"capture", "--job", "j1", "--duration_ms", "100", "--capture_timeout_ms", "5000",
                               "--wait", "--json"},
                              "operator");
  EXPECT_NE(capture.out.find("\"node\":\"n1\""), std::string::npos) << capture.out << capture.err;
  EXPECT_NE(capture.out.find("\"state\":\"FAILED\""), std::string::npos) << capture.out;
  EXPECT_NE(capture.out.find("127.0.0.1:1"), std::string::npos) << capture.out;

  // An agent's token uploads only as its own node; nobody else may claim a capture.
  const std::string trace = testing::CorpusPath("kineto/mi250_rocm62.json.gz");
  CommandResult as_n2 = Cli({"upload", trace, "--job", "j", "--node", "n2", "--json"}, "agent_n1");
  EXPECT_EQ(as_n2.exit_code, 1);
  EXPECT_NE(as_n2.err.find("may upload only as node 'n1'"), std::string::npos) << as_n2.err;
  CommandResult claim = Cli({"upload", trace, "--job", "j", "--label", "capture_id=c1", "--json"}, "operator");
  EXPECT_EQ(claim.exit_code, 1);
  EXPECT_NE(claim.err.find("capture_id label is set by agents only"), std::string::npos) << claim.err;
  // Nor may another agent upload for n1's capture.
  const std::string capture_id = testing::JsonStringField(capture.out, "capture_id");
  ASSERT_FALSE(capture_id.empty()) << capture.out;
  CommandResult foreign = Cli({"upload", trace, "--job", "j1", "--node", "n2", "--label", "capture_id=" + capture_id,
                               "--json"},
                              "agent_n2");
  EXPECT_EQ(foreign.exit_code, 1);
  EXPECT_NE(foreign.err.find("has no target on node n2"), std::string::npos) << foreign.err;
}

TEST_F(SecurityTest, RevokingAnAgentTokenEndsItsStream) {
  ASSERT_GE(cluster_.StartAgent({"--node=n2", "--token_file=" + TokenFile(cluster_, "agent_n2")}), 0);
  const auto connected = [&] {
    CommandResult agents = Cli({"agents", "--json"}, "only_read");
    const size_t at = agents.out.find("\"node\":\"n2\"");
    return at != std::string::npos && agents.out.substr(at, 80).find("\"CONNECTED\"") != std::string::npos;
  };
  ASSERT_TRUE(Eventually(20, connected)) << cluster_.ServerLog();
  // Rewrite the file without n2's line and reload.
  std::ifstream in(tokens_);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string line = Sha256Hex("agent_n2") + " agent,ingest n2\n";
  ASSERT_NE(text.find(line), std::string::npos);
  text.erase(text.find(line), line.size());
  std::ofstream(tokens_) << text;
  ASSERT_EQ(::kill(cluster_.server_pid(), SIGHUP), 0);
  EXPECT_TRUE(Eventually(10, [&] { return !connected(); })) << cluster_.ServerLog();
  std::this_thread::sleep_for(std::chrono::seconds(1));  // its reconnects are refused
  EXPECT_FALSE(connected());
}

// Removes `line` from the tokens file and reloads it.
void Revoke(const TestCluster& cluster, const std::string& tokens, const std::string& line) {
  std::ifstream in(tokens);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_NE(text.find(line), std::string::npos) << line;
  text.erase(text.find(line), line.size());
  std::ofstream(tokens) << text;
  ASSERT_EQ(::kill(cluster.server_pid(), SIGHUP), 0);
}

std::string MetricsText(const TestCluster& cluster) {
  httplib::Client http("http://" + cluster.http_addr());
  httplib::Result res = http.Get("/metrics", {{"Authorization", "Bearer only_read"}});
  return res ? res->body : "";
}

// Issue 21, item 6: on 52e8783 the principal was taken when a stream began, so a stream
// opened before a revoke registered its node afterwards and an upload opened before it
// committed. Now the reload cancels both, and each message is checked again.
TEST_F(SecurityTest, ARevokedTokenEndsTheStreamsItOpenedBeforeTheReload) {
  const std::string trace = testing::CorpusPath("kineto/mi250_rocm62.json.gz");
  FLEETPROF_REQUIRE_PATH(trace);
  std::ifstream file(trace, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 1000u);

  // An agent stream without its hello yet, and an upload half sent.
  auto agents = v1::AgentService::NewStub(Channel());
  grpc::ClientContext agent_context;
  agent_context.AddMetadata("authorization", "Bearer agent_n1");
  auto agent_stream = agents->Connect(&agent_context);
  auto ingest = v1::IngestService::NewStub(Channel());
  grpc::ClientContext upload_context;
  upload_context.AddMetadata("authorization", "Bearer only_ingest");
  v1::UploadResponse response;
  auto upload = ingest->Upload(&upload_context, &response);
  v1::UploadRequest first;
  first.mutable_metadata()->set_upload_id("revoked-upload");
  first.mutable_metadata()->set_job("revoked");
  first.mutable_metadata()->set_file_name("mi250.json.gz");
  ASSERT_TRUE(upload->Write(first));
  v1::UploadRequest half;
  half.set_chunk(bytes.substr(0, bytes.size() / 2));
  ASSERT_TRUE(upload->Write(half));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // both calls are in the server

  Revoke(cluster_, tokens_, Sha256Hex("agent_n1") + " agent,ingest n1\n");
  Revoke(cluster_, tokens_, Sha256Hex("only_ingest") + " ingest only_ingest\n");
  const auto revoked_calls = [&] {
    const std::string text = MetricsText(cluster_);
    const std::string name = "\nfleetprof_server_revoked_calls_total ";
    const size_t at = text.find(name);
    return at == std::string::npos ? -1 : std::stoi(text.substr(at + name.size()));
  };
  ASSERT_TRUE(Eventually(10, [&] { return revoked_calls() >= 2; })) << revoked_calls() << cluster_.ServerLog();

  v1::AgentMessage hello;
  hello.mutable_hello()->set_node("n1");
  agent_stream->Write(hello);  // may fail: the call is gone
  v1::ServerMessage welcome;
  EXPECT_FALSE(agent_stream->Read(&welcome)) << "no welcome for a revoked token";
  EXPECT_NE(agent_stream->Finish().error_code(), grpc::StatusCode::OK);
  EXPECT_EQ(Cli({"agents", "--json"}, "only_read").out.find("\"n1\""), std::string::npos) << "n1 never registered";

  v1::UploadRequest rest;
  rest.set_chunk(bytes.substr(bytes.size() / 2));
  upload->Write(rest);
  upload->WritesDone();
  EXPECT_NE(upload->Finish().error_code(), grpc::StatusCode::OK);
  CommandResult listed = Cli({"profiles", "--job", "revoked", "--json"}, "only_read");
  EXPECT_EQ(listed.out.find("profile_id"), std::string::npos) << "nothing committed: " << listed.out;
}

TEST_F(SecurityTest, AStreamThatNeverSaysHelloIsClosed) {
  auto agents = v1::AgentService::NewStub(Channel());
  grpc::ClientContext context;
  context.AddMetadata("authorization", "Bearer agent_n1");
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  const auto start = std::chrono::steady_clock::now();
  auto stream = agents->Connect(&context);
  v1::ServerMessage message;
  EXPECT_FALSE(stream->Read(&message));
  const grpc::Status status = stream->Finish();
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::CANCELLED) << status.error_message();
  EXPECT_LT(waited, 30) << "closed by the server's hello deadline (10 s), not the client's (60 s)";
  std::cout << "a stream without hello was closed after " << waited << " s" << std::endl;
}

TEST_F(SecurityTest, AFailedReloadIsLoudAndThePreviousTokensStay) {
  std::ofstream(tokens_, std::ios::app) << "not-a-hash read broken\n";
  ASSERT_EQ(::kill(cluster_.server_pid(), SIGHUP), 0);
  ASSERT_TRUE(Eventually(10, [&] {
    return MetricsText(cluster_).find("\nfleetprof_server_tokens_reload_failed 1\n") != std::string::npos;
  })) << cluster_.ServerLog();
  httplib::Client http("http://" + cluster_.http_addr());
  httplib::Result health = http.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200) << "the server still serves";
  EXPECT_NE(health->body.find("warning: the last reload of the tokens file failed"), std::string::npos) << health->body;
  EXPECT_NE(MetricsText(cluster_).find("fleetprof_server_tokens_reloads_total{result=\"failed\"} 1"), std::string::npos);
  EXPECT_EQ(Cli({"profiles"}, "only_read").exit_code, 0) << "the previous principals stay";
}

TEST_F(SecurityTest, AnUploadIdBelongsToThePrincipalThatStartedIt) {
  const std::string trace = testing::CorpusPath("kineto/mi250_rocm62.json.gz");
  FLEETPROF_REQUIRE_PATH(trace);
  CommandResult first = Cli({"upload", trace, "--job", "j", "--upload_id", "shared-1", "--json"}, "operator");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  CommandResult again = Cli({"upload", trace, "--job", "j", "--upload_id", "shared-1", "--json"}, "operator");
  EXPECT_EQ(again.exit_code, 0) << again.err;  // idempotent for its owner
  EXPECT_EQ(again.out, first.out);

  auto stub = v1::IngestService::NewStub(Channel());
  auto state_for_other = [&] {
    grpc::ClientContext context;
    context.AddMetadata("authorization", "Bearer only_ingest");
    v1::GetUploadStateRequest request;
    request.set_upload_id("shared-1");
    v1::UploadState state;
    EXPECT_TRUE(stub->GetUploadState(&context, request, &state).ok());
    return state;
  };
  // Issue 21, item 9: on 52e8783 this answered PERMISSION_DENIED while an unused id answered
  // UNKNOWN, so anyone could probe which upload ids exist. Another's id now reads as unknown.
  v1::UploadState before = state_for_other();
  EXPECT_EQ(before.state(), v1::UploadState::UNKNOWN);
  EXPECT_EQ(before.profile_id(), "");
  // And an upload with it is the other principal's own upload (on 52e8783: "belongs to another
  // principal", which confirmed the id existed): ids live in each principal's namespace.
  CommandResult other = Cli({"upload", trace, "--job", "j", "--upload_id", "shared-1", "--json"}, "only_ingest");
  ASSERT_EQ(other.exit_code, 0) << other.err;
  EXPECT_EQ(other.err.find("another principal"), std::string::npos) << other.err;
  auto profile_of = [](const std::string& json) {
    const size_t at = json.find("\"profile_id\":\"");
    return at == std::string::npos ? std::string() : json.substr(at + 14, json.find('"', at + 14) - at - 14);
  };
  EXPECT_NE(profile_of(other.out), "");
  EXPECT_NE(profile_of(other.out), profile_of(first.out)) << "a profile of its own";
  EXPECT_EQ(state_for_other().profile_id(), profile_of(other.out));
  CommandResult owner_again = Cli({"upload", trace, "--job", "j", "--upload_id", "shared-1", "--json"}, "operator");
  EXPECT_EQ(owner_again.out, first.out) << "the owner's upload is untouched";
  // The uploader is recorded and shown.
  CommandResult listed = Cli({"profiles", "--job", "j", "--json"}, "only_read");
  EXPECT_NE(listed.out.find("\"uploaded_by\":\"ops\""), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("\"uploaded_by\":\"only_ingest\""), std::string::npos) << listed.out;
  CommandResult spoofed = Cli({"upload", trace, "--job", "j", "--label", "uploaded_by=admin", "--json"}, "operator");
  EXPECT_EQ(spoofed.exit_code, 1);
  EXPECT_NE(spoofed.err.find("uploaded_by label is set by the server"), std::string::npos) << spoofed.err;
  // Labels only an agent can vouch for are refused to other principals.
  CommandResult forged = Cli({"upload", trace, "--job", "j", "--label", "source=capture", "--json"}, "operator");
  EXPECT_EQ(forged.exit_code, 1);
  EXPECT_NE(forged.err.find("source label is set by agents only"), std::string::npos) << forged.err;
  // So are the clock labels a job timeline aligns ranks by (a tiny forged uncertainty would win).
  CommandResult clock = Cli({"upload", trace, "--job", "j", "--label", "clock_uncertainty_ns=1", "--json"}, "operator");
  EXPECT_EQ(clock.exit_code, 1);
  EXPECT_NE(clock.err.find("clock_uncertainty_ns label is set by agents only"), std::string::npos) << clock.err;
}

// Issue 21, item 9: job names reach logs and terminals (`fleetprof captures`); on 52e8783 a
// capture or schedule took escape sequences and newlines as its job.
TEST_F(SecurityTest, CaptureAndScheduleJobNamesArePrintableText) {
  for (const std::string& job : {std::string("evil\x1b[2J"), std::string("two\nlines"), std::string(300, 'j')}) {
    CommandResult capture = Cli({"capture", "--job", job, "--json"}, "operator");
    EXPECT_NE(capture.exit_code, 0);
    EXPECT_NE(capture.err.find("printable UTF-8"), std::string::npos) << capture.err;
    CommandResult schedule = Cli({"schedule", "--job", job, "--every", "30m", "--json"}, "all_but_read");
    EXPECT_NE(schedule.exit_code, 0);
    EXPECT_NE(schedule.err.find("printable UTF-8"), std::string::npos) << schedule.err;
  }
}

// Issue 39: DeleteSchedule needed only the capture scope, so any capture token deleted other
// principals' schedules. The principal that created a schedule deletes it, or an admin; the
// rule is the operation's, so gRPC (the CLI) and HTTP answer alike.
TEST_F(SecurityTest, AScheduleIsDeletedOnlyByItsCreatorOrAnAdmin) {
  const auto create = [&] {
    CommandResult made = Cli({"schedule", "--job", "nightly", "--every", "30m", "--json"}, "only_capture");
    EXPECT_EQ(made.exit_code, 0) << made.err;
    EXPECT_NE(made.out.find("\"created_by\":\"only_capture\""), std::string::npos) << made.out;
    return testing::JsonStringField(made.out, "schedule_id");
  };
  const std::string first = create(), second = create();
  ASSERT_FALSE(first.empty() || second.empty());
  httplib::Client http("http://" + cluster_.http_addr());
  const auto http_delete = [&](const std::string& id, const std::string& token) {
    httplib::Result res = http.Delete("/api/v1/schedules/" + id, {{"Authorization", "Bearer " + token}});
    return res ? std::make_pair(res->status, res->body) : std::make_pair(-1, std::string());
  };
  const std::string rule = "only its creator or a principal with the admin scope may delete it";

  // Another principal with the capture scope: refused over gRPC and over HTTP.
  CommandResult grpc_denied = Cli({"unschedule", first}, "operator");
  EXPECT_NE(grpc_denied.exit_code, 0);
  EXPECT_NE(grpc_denied.err.find(rule), std::string::npos) << grpc_denied.err;
  const auto [http_status, http_body] = http_delete(first, "operator");
  EXPECT_EQ(http_status, 403) << http_body;
  EXPECT_NE(http_body.find(rule), std::string::npos) << http_body;
  const std::string listed = Cli({"schedules", "--json"}, "only_read").out;
  EXPECT_TRUE(listed.find(first) != std::string::npos && listed.find(second) != std::string::npos) << listed;

  // Its creator deletes one over HTTP; an admin (with capture, the method's scope) the other by gRPC.
  EXPECT_EQ(http_delete(first, "only_capture").first, 200);
  CommandResult by_admin = Cli({"unschedule", second, "--json"}, "all_but_read");
  EXPECT_EQ(by_admin.exit_code, 0) << by_admin.err;
  EXPECT_EQ(Cli({"schedules", "--json"}, "only_read").out, "{\"schedules\":[]}\n");
}

TEST_F(SecurityTest, SighupReloadsTheTokensFile) {
  EXPECT_EQ(Cli({"profiles"}, "fresh").exit_code, 1);
  std::ofstream(tokens_, std::ios::app) << Sha256Hex("fresh") << " read fresh\n";
  ASSERT_EQ(::kill(cluster_.server_pid(), SIGHUP), 0);
  EXPECT_TRUE(Eventually(10, [&] { return Cli({"profiles"}, "fresh").exit_code == 0; })) << cluster_.ServerLog();
}

// Every file under `dir` down to `depth` levels, relative. Other tests create and remove
// folders in /tmp meanwhile: a folder that vanishes or cannot be read is passed over, never
// the end of the listing (which made files that were there before look new).
void ListInto(const std::filesystem::path& root, const std::filesystem::path& dir, int depth,
              std::set<std::string>* files) {
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(dir, ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec)) {
    files->insert(std::filesystem::relative(it->path(), root).string());
    std::error_code type_ec;
    if (depth > 1 && it->is_directory(type_ec) && !it->is_symlink(type_ec)) ListInto(root, it->path(), depth - 1, files);
  }
}

std::set<std::string> FilesUnder(const std::string& dir, int depth = 64) {
  std::set<std::string> files;
  ListInto(dir, dir, depth + 1, &files);  // entries down to `depth` levels below the top ones
  return files;
}

// Issue 21, item 8: without tokens, a web page the user visits could POST a schedule as
// text/plain (no preflight) and, through a name of its own resolving to 127.0.0.1 (DNS
// rebinding), read every answer. On 52e8783 both worked; now the edge refuses them, and the
// server's own page, curl with a JSON body and names given by --http_allowed_hosts still work.
TEST(BrowserPages, WithoutTokensAWebPageFromElsewhereCanNeitherWriteNorRead) {
  TestCluster cluster;
  ASSERT_TRUE(cluster.StartServer("127.0.0.1:0", {"--http_allowed_hosts=profiler.internal"})) << cluster.ServerLog();
  const std::string port = cluster.http_addr().substr(cluster.http_addr().rfind(':') + 1);
  httplib::Client http("http://" + cluster.http_addr());
  const std::string schedule = R"({"job":"victim","every_ms":60000,"duration_ms":1000})";
  const auto schedules = [&] {
    httplib::Result res = http.Get("/api/v1/schedules");
    return res ? res->body : "unreachable";
  };

  httplib::Result plain = http.Post("/api/v1/schedules", schedule, "text/plain");
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->status, 400) << plain->body;
  EXPECT_NE(plain->body.find("Content-Type: application/json"), std::string::npos) << plain->body;

  httplib::Result foreign = http.Post("/api/v1/schedules", {{"Origin", "http://evil.example"}}, schedule, "application/json");
  ASSERT_TRUE(foreign);
  EXPECT_EQ(foreign->status, 403) << foreign->body;
  httplib::Result fetch_site =
      http.Post("/api/v1/schedules", {{"Sec-Fetch-Site", "cross-site"}}, schedule, "application/json");
  ASSERT_TRUE(fetch_site);
  EXPECT_EQ(fetch_site->status, 403) << fetch_site->body;
  EXPECT_EQ(schedules().find("victim"), std::string::npos) << "no schedule was made: " << schedules();

  // DNS rebinding: the page's own name, now pointing at 127.0.0.1, in the Host header.
  httplib::Result rebound = http.Get("/api/v1/profiles", {{"Host", "rebind.evil.example:" + port}});
  ASSERT_TRUE(rebound);
  EXPECT_EQ(rebound->status, 403) << rebound->body;
  EXPECT_NE(rebound->body.find("--http_allowed_hosts"), std::string::npos) << rebound->body;
  httplib::Result health = http.Get("/healthz", {{"Host", "10.1.2.3:" + port}});
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200) << "probes use any Host";

  for (const std::string& host : std::vector<std::string>{"localhost:" + port, "profiler.internal:" + port, "127.0.0.1"}) {
    httplib::Result ok = http.Get("/api/v1/profiles", {{"Host", host}});
    ASSERT_TRUE(ok);
    EXPECT_EQ(ok->status, 200) << host << ": " << ok->body;
  }
  httplib::Result same_origin = http.Post(
      "/api/v1/schedules", {{"Origin", "http://" + cluster.http_addr()}, {"Sec-Fetch-Site", "same-origin"}}, schedule,
      "application/json; charset=utf-8");
  ASSERT_TRUE(same_origin);
  EXPECT_EQ(same_origin->status, 200) << same_origin->body;
  EXPECT_NE(schedules().find("victim"), std::string::npos);
}

TEST(AgentPaths, HostileJobValuesNeverPlaceAFileOutsideTheAgentsFolders) {
  using namespace std::string_literals;
  TestCluster cluster;
  ASSERT_TRUE(cluster.StartServer());
  // A fake /proc: processes whose environment tries to steer the agent's paths. The one with
  // a plain address is captured (nothing listens there, so it fails) under a hostile job name.
  const std::string proc = cluster.root() + "/proc";
  // Each with the uid (status) and start time (stat) that discovery pins a target to.
  const auto process = [&](int pid, const std::string& environ) {
    const std::string dir = proc + "/" + std::to_string(pid);
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/environ") << environ;
    std::ofstream(dir + "/status") << "Uid:\t0\t0\t0\t0\n";
    std::ofstream(dir + "/stat") << pid << " (python) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 " << 500 + pid << " 0 0\n";
  };
  process(10, "FLEETPROF_JOB=evil\0FLEETPROF_XPROF_ADDR=../../../../tmp/x:1\0"s);
  process(11, "FLEETPROF_JOB=evil\0FLEETPROF_XPROF_ADDR=127.0.0.1:1/../../../x\0"s);
  process(12, "FLEETPROF_JOB=evil\xff\0FLEETPROF_XPROF_ADDR=127.0.0.1:2\0"s);
  process(13, "FLEETPROF_JOB=../../evil\0FLEETPROF_XPROF_ADDR=127.0.0.1:1\0"s);
  const std::set<std::string> tmp_before = FilesUnder("/tmp", 2);
  const int agent = cluster.StartAgent({"--node=paths", "--proc_root=" + proc, "--discover_interval_ms=100"});
  ASSERT_GE(agent, 0);
  ASSERT_TRUE(Eventually(20, [&] {
    return cluster.Cli({"agents", "--json"}).out.find("\"job\":\"../../evil\"") != std::string::npos;
  })) << cluster.Cli({"agents", "--json"}).out;
  CommandResult agents = cluster.Cli({"agents", "--json"});
  EXPECT_EQ(agents.out.find("tmp/x"), std::string::npos) << agents.out;  // refused, not registered
  EXPECT_EQ(agents.out.find("127.0.0.1:2"), std::string::npos) << agents.out;
  CommandResult capture = cluster.Cli({"capture", "--job", "../../evil", "--duration_ms", "100",
                                       "--capture_timeout_ms", "5000", "--wait", "--json"});
  EXPECT_NE(capture.out.find("\"state\":\"FAILED\""), std::string::npos) << capture.out << capture.err;

  // Nothing outside the agent's own folder and the server's: the cluster root holds only
  // what it held, and /tmp gained no entry from this test's agent.
  for (const std::string& file : FilesUnder(cluster.root())) {
    const bool ours = file.rfind("agent0", 0) == 0 || file.rfind("server", 0) == 0 || file.rfind("proc", 0) == 0 ||
                      file.rfind("agent0.", 0) == 0;
    EXPECT_TRUE(ours) << file;
  }
  for (const std::string& file : FilesUnder(cluster.root() + "/agent0")) {
    EXPECT_EQ(file.find(".."), std::string::npos) << file;
  }
  for (const std::string& file : FilesUnder("/tmp", 2)) {
    if (tmp_before.count(file) || file.rfind("fleetprof-", 0) == 0) continue;  // other tests' folders
    EXPECT_EQ(file.find("evil"), std::string::npos) << file;
    EXPECT_NE(file, "x");
  }
}

// Test certificates from Debian's openssl: a CA, a server certificate for 127.0.0.1 and
// localhost, and a client certificate.
class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A server that refuses the handshake closes the socket under the client's write.
    ::signal(SIGPIPE, SIG_IGN);
    dir_ = cluster_.root() + "/pki";
    CommandResult made = testing::MakeTestPki(dir_);
    FLEETPROF_REQUIRE(made.exit_code == 0, "openssl, to make test certificates: " << made.err);
  }
  std::string Pki(const std::string& name) const { return dir_ + "/" + name; }
  std::vector<std::string> ServerTls() const {
    return {"--tls_cert=" + Pki("server.pem"), "--tls_key=" + Pki("server.key")};
  }
  TestCluster cluster_;
  std::string dir_;
};

TEST_F(TlsTest, CliAndAgentWorkOverTlsAndAClientWithoutTheCaFailsClearly) {
  ASSERT_TRUE(cluster_.StartServer("127.0.0.1:0", ServerTls())) << cluster_.ServerLog();
  CommandResult ok = cluster_.Cli({"profiles", "--json", "--tls_ca=" + Pki("ca.pem")});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  CommandResult plain = cluster_.Cli({"profiles", "--json", "--timeout_s=3"});
  EXPECT_EQ(plain.exit_code, 1) << plain.err;
  EXPECT_NE(plain.err.find("if the server uses TLS, pass --tls_ca"), std::string::npos) << plain.err;
  CommandResult wrong_ca = cluster_.Cli({"profiles", "--json", "--timeout_s=3", "--tls_ca=" + Pki("other.pem")});
  EXPECT_EQ(wrong_ca.exit_code, 1) << wrong_ca.err;
  EXPECT_NE(wrong_ca.err.find("check that --tls_ca signed the server's certificate"), std::string::npos)
      << wrong_ca.err;

  ASSERT_GE(cluster_.StartAgent({"--node=tls-node", "--tls_ca=" + Pki("ca.pem")}), 0);
  EXPECT_TRUE(Eventually(20, [&] {
    return cluster_.Cli({"agents", "--json", "--tls_ca=" + Pki("ca.pem")}).out.find("\"CONNECTED\"") !=
           std::string::npos;
  })) << cluster_.ServerLog();

  httplib::SSLClient https("127.0.0.1", std::stoi(cluster_.http_addr().substr(cluster_.http_addr().rfind(':') + 1)));
  https.set_ca_cert_path(Pki("ca.pem").c_str());
  https.enable_server_certificate_verification(true);
  httplib::Result health = https.Get("/healthz");
  ASSERT_TRUE(health) << httplib::to_string(health.error());
  EXPECT_EQ(health->status, 200);
}

TEST_F(TlsTest, MutualTlsRefusesAClientWithoutACertificate) {
  std::vector<std::string> flags = ServerTls();
  flags.push_back("--tls_client_ca=" + Pki("ca.pem"));
  ASSERT_TRUE(cluster_.StartServer("127.0.0.1:0", flags)) << cluster_.ServerLog();
  CommandResult without = cluster_.Cli({"profiles", "--json", "--timeout_s=3", "--tls_ca=" + Pki("ca.pem")});
  EXPECT_EQ(without.exit_code, 1) << without.out;
  CommandResult with = cluster_.Cli({"profiles", "--json", "--tls_ca=" + Pki("ca.pem"),
                                     "--tls_cert=" + Pki("client.pem"), "--tls_key=" + Pki("client.key")});
  EXPECT_EQ(with.exit_code, 0) << with.err;

  const int port = std::stoi(cluster_.http_addr().substr(cluster_.http_addr().rfind(':') + 1));
  httplib::SSLClient anonymous("127.0.0.1", port);
  anonymous.set_ca_cert_path(Pki("ca.pem").c_str());
  EXPECT_FALSE(anonymous.Get("/healthz"));
  httplib::SSLClient known("127.0.0.1", port, Pki("client.pem"), Pki("client.key"));
  known.set_ca_cert_path(Pki("ca.pem").c_str());
  httplib::Result res = known.Get("/healthz");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
}

TEST_F(TlsTest, AnExposedListenerNeedsTokensAndTls) {
  const auto server = [&](std::vector<std::string> extra) {
    std::vector<std::string> argv = {testing::BinDir() + "/fleetprof-server", "--grpc_addr=0.0.0.0:0",
                                     "--http_addr=127.0.0.1:0", "--data_dir=" + cluster_.root() + "/exposed"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return RunCommand(argv, 20);
  };
  CommandResult bare = server({});
  EXPECT_EQ(bare.exit_code, 2);
  EXPECT_NE(bare.err.find("refusing --grpc_addr=0.0.0.0:0: a non-loopback listener needs --auth_tokens_file"),
            std::string::npos)
      << bare.err;
  const std::string tokens = cluster_.root() + "/tokens";
  std::ofstream(tokens) << Sha256Hex("t") << " read r\n";
  CommandResult no_tls = server({"--auth_tokens_file=" + tokens});
  EXPECT_EQ(no_tls.exit_code, 2);
  EXPECT_NE(no_tls.err.find("--tls_cert and --tls_key, or --insecure"), std::string::npos) << no_tls.err;

  // With tokens and TLS it starts (and stops on SIGTERM).
  std::vector<std::string> flags = ServerTls();
  flags.push_back("--auth_tokens_file=" + tokens);
  EXPECT_TRUE(cluster_.StartServer("0.0.0.0:0", flags)) << cluster_.ServerLog();
  EXPECT_EQ(cluster_.StopServer(), 0);
}

}  // namespace
}  // namespace fleetprof
