// The token check and the access tables, without a transport.
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "auth/access_guard.h"
#include "api/access_policy.h"
#include "auth/exposure.h"
#include "auth/token_hash.h"
#include "gtest/gtest.h"
#include "tests/e2e/process_runner.h"
#include "tests/security/scratch_dir_test.h"

namespace fleetprof {
namespace {

class AccessGuardTest : public testing::ScratchDirTest {
 protected:
  std::string Write(const std::string& text) { return WriteFile("tokens", text); }
};

TEST(TokenHash, MatchesSha256sum) {
  // printf 'secret' | sha256sum
  EXPECT_EQ(Sha256Hex("secret"), "2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b");
  EXPECT_TRUE(ConstantTimeEquals("abc", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abcd"));
}

TEST(BearerToken, ParsesTheSchemeCaseInsensitively) {
  EXPECT_EQ(BearerToken("Bearer abc"), "abc");
  EXPECT_EQ(BearerToken("bearer   abc "), "abc");
  EXPECT_EQ(BearerToken("Basic abc"), "");
  EXPECT_EQ(BearerToken("Bearer"), "");
  EXPECT_EQ(BearerToken(""), "");
}

TEST_F(AccessGuardTest, AuthorizesByTokenAndScope) {
  auto guard = AccessGuard::FromTokensFile(Write("# ops team\n" + Sha256Hex("r1") + " read dash  # grafana\n" +
                                                 Sha256Hex("a1") + " agent,ingest n1\n"));
  ASSERT_TRUE(guard.ok()) << guard.status();
  EXPECT_TRUE((*guard)->enabled());
  EXPECT_EQ((*guard)->principal_count(), 2u);

  auto reader = (*guard)->Authorize("Bearer r1", Scope::kRead);
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ(reader->name, "dash");
  EXPECT_TRUE(reader->authenticated);
  EXPECT_EQ(reader->node(), "");

  auto agent = (*guard)->Authorize("Bearer a1", Scope::kAgent);
  ASSERT_TRUE(agent.ok());
  EXPECT_EQ(agent->node(), "n1");

  EXPECT_EQ((*guard)->Authorize("", Scope::kRead).status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ((*guard)->Authorize("Bearer nope", Scope::kRead).status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ((*guard)->Authorize("r1", Scope::kRead).status().code(), absl::StatusCode::kUnauthenticated);
  absl::Status denied = (*guard)->Authorize("Bearer r1", Scope::kCapture).status();
  EXPECT_EQ(denied.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(denied.message().find("'dash' has scopes read; this needs 'capture'"), std::string::npos) << denied;
}

TEST_F(AccessGuardTest, OffMeansEveryoneIsAnonymousWithEveryScope) {
  AccessGuard off;
  auto p = off.Authorize("", Scope::kAdmin);
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->authenticated);
  EXPECT_EQ(p->node(), "");
}

TEST_F(AccessGuardTest, BadLinesAreRefusedWithTheirLineNumber) {
  const std::string hash = Sha256Hex("t");
  const std::pair<std::string, std::string> cases[] = {
      {hash + " read", ":1: expected three fields"},
      {"ABC read x", ":1: the first field must be"},
      {"\n" + hash + " write x", ":2: unknown scope 'write'"},
      {hash + " read a/b", ":1: the name must be"},
      {hash + " read a\n" + hash + " ingest b", ":2: the same token hash appears twice"},
  };
  for (const auto& [text, want] : cases) {
    auto guard = AccessGuard::FromTokensFile(Write(text));
    ASSERT_FALSE(guard.ok()) << text;
    EXPECT_NE(guard.status().message().find(want), std::string::npos) << guard.status();
  }
  EXPECT_EQ(AccessGuard::FromTokensFile(dir_ + "/missing").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(AccessGuardTest, ReloadPicksUpChangesAndKeepsTheOldSetOnError) {
  const std::string path = Write(Sha256Hex("old") + " read a\n");
  auto guard = AccessGuard::FromTokensFile(path);
  ASSERT_TRUE(guard.ok());
  std::ofstream(path) << Sha256Hex("new") << " read b\n";
  ASSERT_TRUE((*guard)->Reload().ok());
  EXPECT_FALSE((*guard)->Authorize("Bearer old", Scope::kRead).ok());
  EXPECT_TRUE((*guard)->Authorize("Bearer new", Scope::kRead).ok());
  std::ofstream(path) << "garbage\n";
  EXPECT_FALSE((*guard)->Reload().ok());
  EXPECT_TRUE((*guard)->Authorize("Bearer new", Scope::kRead).ok());  // still in force
}

// Issue 21, item 9: on 52e8783 a tokens file anyone could write was read as it was.
TEST_F(AccessGuardTest, ATokensFileOthersMayWriteOrOwnIsRefused) {
  const std::string path = Write(Sha256Hex("t") + " read a\n");
  ASSERT_TRUE(AccessGuard::FromTokensFile(path).ok());
  ASSERT_EQ(::chmod(path.c_str(), 0666), 0);
  auto writable = AccessGuard::FromTokensFile(path);
  ASSERT_FALSE(writable.ok());
  EXPECT_NE(writable.status().message().find("writable by its group or others (mode 0666)"), std::string::npos)
      << writable.status().message();
  ASSERT_EQ(::chmod(path.c_str(), 0620), 0);
  EXPECT_FALSE(AccessGuard::FromTokensFile(path).ok());
  ASSERT_EQ(::chmod(path.c_str(), 0640), 0);
  // A Kubernetes Secret: the mounted name is a link to ..data/NAME, ..data a link to a folder.
  const std::string secret = dir_ + "/secret";
  ASSERT_EQ(::mkdir(secret.c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((secret + "/..2026_12_02").c_str(), 0755), 0);
  ASSERT_EQ(::rename(path.c_str(), (secret + "/..2026_12_02/tokens").c_str()), 0);
  ASSERT_EQ(::symlink("..2026_12_02", (secret + "/..data").c_str()), 0);
  ASSERT_EQ(::symlink("..data/tokens", (secret + "/tokens").c_str()), 0);
  EXPECT_TRUE(AccessGuard::FromTokensFile(secret + "/tokens").ok());
  if (::geteuid() == 0) {
    ASSERT_EQ(::chown((secret + "/..2026_12_02/tokens").c_str(), 1001, 1001), 0);
    auto foreign = AccessGuard::FromTokensFile(secret + "/tokens");
    ASSERT_FALSE(foreign.ok());
    EXPECT_NE(foreign.status().message().find("belongs to uid 1001"), std::string::npos) << foreign.status().message();
  }
}

TEST(AccessPolicy, HttpRoutesNeedTheirScope) {
  EXPECT_TRUE(RuleForHttp("GET", "/healthz").is_public);
  EXPECT_TRUE(RuleForHttp("GET", "/").is_public);
  EXPECT_TRUE(RuleForHttp("GET", "/assets/app.js").is_public);
  EXPECT_TRUE(RuleForHttp("GET", "/profiles/x").is_public);  // a page of the web app
  EXPECT_EQ(RuleForHttp("GET", "/metrics").scope, Scope::kRead);
  EXPECT_EQ(RuleForHttp("GET", "/api/v1/profiles").scope, Scope::kRead);
  EXPECT_EQ(RuleForHttp("POST", "/api/v1/captures").scope, Scope::kCapture);
  EXPECT_EQ(RuleForHttp("DELETE", "/api/v1/profiles/x").scope, Scope::kAdmin);
  EXPECT_EQ(RuleForHttp("PUT", "/api/v1/anything").scope, Scope::kAdmin);
  EXPECT_FALSE(RuleForHttp("GET", "/api/v1/profiles").is_public);
}

TEST(AccessPolicy, AnUnknownGrpcMethodIsRefusedForEveryone) {
  EXPECT_EQ(RuleForGrpcMethod("/fleetprof.v1.IngestService/Delete").status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(RuleForGrpcMethod("/fleetprof.v1.QueryService/ListProfiles")->scope, Scope::kRead);
  EXPECT_FALSE(RuleForGrpcMethod("/fleetprof.v1.QueryService/DropEverything").ok()) << "methods are listed by name";
  EXPECT_TRUE(RuleForGrpcMethod("/grpc.health.v1.Health/Check")->is_public);
}

TEST(Exposure, NonLoopbackNeedsTokensAndTls) {
  EXPECT_TRUE(IsLoopbackAddress("127.0.0.1:7070"));
  EXPECT_TRUE(IsLoopbackAddress("localhost:1"));
  EXPECT_TRUE(IsLoopbackAddress("[::1]:7070"));
  EXPECT_FALSE(IsLoopbackAddress("0.0.0.0:7070"));
  EXPECT_FALSE(IsLoopbackAddress("[::]:7070"));
  EXPECT_FALSE(IsLoopbackAddress("10.1.2.3:7070"));
  EXPECT_FALSE(IsLoopbackAddress("127.attacker.example:7070"));
  EXPECT_FALSE(IsLoopbackAddress("127.0.0.1.nip.io:7070"));
  EXPECT_TRUE(IsLoopbackAddress("127.9.8.7:1"));
  EXPECT_TRUE(IsLoopbackAddress("ipv4:127.0.0.1:1"));
  EXPECT_TRUE(CheckExposure("grpc_addr", "127.0.0.1:0", {}).ok());
  absl::Status bare = CheckExposure("grpc_addr", "0.0.0.0:7070", {});
  EXPECT_EQ(bare.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(bare.message().find("--auth_tokens_file"), std::string::npos);
  EXPECT_NE(CheckExposure("grpc_addr", "0.0.0.0:7070", {true, false, false}).message().find("--tls_cert"),
            std::string::npos);
  EXPECT_TRUE(CheckExposure("grpc_addr", "0.0.0.0:7070", {true, true, false}).ok());
  EXPECT_TRUE(CheckExposure("grpc_addr", "0.0.0.0:7070", {false, false, true}).ok());
}

}  // namespace
}  // namespace fleetprof
