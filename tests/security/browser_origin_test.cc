// The browser rules of the HTTP edge (auth/browser_origin.h), one case per way a web page
// reaches a server on the user's machine, and the cases that must keep working.
#include "auth/browser_origin.h"

#include "gtest/gtest.h"

namespace fleetprof {
namespace {

BrowserRequest Write(std::string_view content_type = "application/json") {
  BrowserRequest r;
  r.method = "POST";
  r.is_write = true;
  r.has_body = true;
  r.content_type = content_type;
  r.host = "127.0.0.1:7071";
  return r;
}

absl::StatusCode Check(const BrowserRequest& r, bool tokens = false, std::vector<std::string> allowed = {}) {
  BrowserPolicy policy;
  policy.tokens = tokens;
  policy.allowed_hosts = std::move(allowed);
  return CheckBrowserRequest(r, policy).code();
}

TEST(BrowserOrigin, ACrossSiteSimplePostWithPlainTextIsRefused) {
  EXPECT_EQ(Check(Write("text/plain")), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Check(Write("application/x-www-form-urlencoded")), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Check(Write("")), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Check(Write("text/plain"), /*tokens=*/true), absl::StatusCode::kInvalidArgument);
}

TEST(BrowserOrigin, JsonBodiesWithParametersAndAnyCaseAreAccepted) {
  EXPECT_EQ(Check(Write("application/json")), absl::StatusCode::kOk);
  EXPECT_EQ(Check(Write("Application/JSON; charset=utf-8")), absl::StatusCode::kOk);
  BrowserRequest no_body = Write("");
  no_body.has_body = false;  // DELETE, a cancel without a body
  EXPECT_EQ(Check(no_body), absl::StatusCode::kOk);
}

TEST(BrowserOrigin, AWriteFromAnotherOriginIsForbidden) {
  for (std::string_view origin : {"http://evil.example", "null", "http://127.0.0.1:8888", "https://127.0.0.1",
                                  "file://", "http://127.0.0.1:7071/path"}) {
    BrowserRequest r = Write();
    r.origin = origin;
    EXPECT_EQ(Check(r), absl::StatusCode::kPermissionDenied) << origin;
    EXPECT_EQ(Check(r, /*tokens=*/true), absl::StatusCode::kPermissionDenied) << origin;
  }
  BrowserRequest r = Write();
  r.sec_fetch_site = "cross-site";
  EXPECT_EQ(Check(r), absl::StatusCode::kPermissionDenied);
}

TEST(BrowserOrigin, TheServersOwnPagesMayWrite) {
  BrowserRequest r = Write();
  r.origin = "http://127.0.0.1:7071";
  r.sec_fetch_site = "same-origin";
  EXPECT_EQ(Check(r), absl::StatusCode::kOk);
  r.host = "LOCALHOST";
  r.origin = "http://localhost";
  EXPECT_EQ(Check(r), absl::StatusCode::kOk);
  r.host = "[::1]:7071";
  r.origin = "http://[::1]:7071";
  EXPECT_EQ(Check(r), absl::StatusCode::kOk);
  r.host = "localhost";
  r.origin = "https://localhost";
  EXPECT_EQ(Check(r), absl::StatusCode::kOk);
}

TEST(BrowserOrigin, WithoutTokensOnlyLoopbackNamesOrAllowedHostsMayBeAddressed) {
  BrowserRequest read;
  read.method = "GET";
  for (std::string_view host : {"127.0.0.1:7071", "localhost", "localhost:7071", "[::1]:7071", "app.localhost:7071",
                                "localhost.", "127.1.2.3"}) {
    read.host = host;
    EXPECT_EQ(Check(read), absl::StatusCode::kOk) << host;
  }
  for (std::string_view host : {"evil.example:7071", "rebind.evil.example", "127.0.0.1.evil.example", "10.0.0.5:7071",
                                "localhost.evil.example"}) {
    read.host = host;
    EXPECT_EQ(Check(read), absl::StatusCode::kPermissionDenied) << host;
    EXPECT_EQ(Check(read, /*tokens=*/true), absl::StatusCode::kOk) << host << ": tokens protect it";
  }
  read.host = "Profiler.Internal:7071";
  EXPECT_EQ(Check(read, false, {"profiler.internal"}), absl::StatusCode::kOk);
  EXPECT_EQ(Check(read, false, {"profiler.internal:9999"}), absl::StatusCode::kOk) << "the port is not the name";
  read.host = "";
  EXPECT_EQ(Check(read), absl::StatusCode::kOk) << "no Host: no browser sent it";
}

TEST(BrowserOrigin, HostOfAuthorityDropsPortsBracketsAndCase) {
  EXPECT_EQ(HostOfAuthority("Example.COM:80"), "example.com");
  EXPECT_EQ(HostOfAuthority("[::1]:7071"), "::1");
  EXPECT_EQ(HostOfAuthority("::1"), "::1");
  EXPECT_EQ(HostOfAuthority(" localhost. "), "localhost");
}

}  // namespace
}  // namespace fleetprof
