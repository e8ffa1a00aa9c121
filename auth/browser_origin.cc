#include "auth/browser_origin.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "auth/exposure.h"

namespace fleetprof {
namespace {

// Debian's Abseil has a string_view of its own.
absl::string_view View(std::string_view text) { return absl::string_view(text.data(), text.size()); }

bool IsJsonMediaType(std::string_view content_type) {
  const absl::string_view media = absl::StripAsciiWhitespace(View(content_type.substr(0, content_type.find(';'))));
  return absl::EqualsIgnoreCase(media, "application/json");
}

// "http://h:8080" → "h:8080"; "https://h" → "h:443". Empty for what is not http(s)://authority
// (including the "null" origin of sandboxed frames and file: pages).
std::string OriginAuthority(std::string_view origin) {
  absl::string_view rest = View(origin);
  std::string default_port;
  if (absl::ConsumePrefix(&rest, "http://")) {
    default_port = "80";
  } else if (absl::ConsumePrefix(&rest, "https://")) {
    default_port = "443";
  } else {
    return "";
  }
  if (rest.empty() || rest.find('/') != absl::string_view::npos) return "";
  std::string authority = absl::AsciiStrToLower(rest);
  const size_t bracket = authority.rfind(']');
  const size_t colon = authority.rfind(':');
  const bool has_port = colon != std::string::npos && (bracket == std::string::npos || colon > bracket);
  if (!has_port) absl::StrAppend(&authority, ":", default_port);
  return authority;
}

// The Host header with the port the origin would state: a Host without one is compared on
// both default ports, so "h" matches "http://h" and "https://h".
bool SameAuthority(std::string_view host, const std::string& origin_authority) {
  const std::string lower = absl::AsciiStrToLower(absl::StripAsciiWhitespace(View(host)));
  if (lower == origin_authority) return true;
  return lower == HostOfAuthority(lower) &&
         (absl::StrCat(lower, ":80") == origin_authority || absl::StrCat(lower, ":443") == origin_authority);
}

bool IsLoopbackName(const std::string& host) {
  return IsLoopbackAddress(host) || absl::EndsWith(host, ".localhost");
}

}  // namespace

std::string HostOfAuthority(std::string_view authority) {
  std::string host = absl::AsciiStrToLower(absl::StripAsciiWhitespace(View(authority)));
  if (!host.empty() && host.front() == '[') {
    const size_t close = host.find(']');
    return close == std::string::npos ? host : host.substr(1, close - 1);
  }
  if (std::count(host.begin(), host.end(), ':') == 1) host.resize(host.find(':'));
  if (!host.empty() && host.back() == '.') host.pop_back();  // "localhost." is localhost too
  return host;
}

absl::Status CheckBrowserRequest(const BrowserRequest& request, const BrowserPolicy& policy) {
  if (!policy.tokens && !request.host.empty()) {
    const std::string host = HostOfAuthority(request.host);
    const bool allowed = IsLoopbackName(host) ||
                         std::any_of(policy.allowed_hosts.begin(), policy.allowed_hosts.end(),
                                     [&](const std::string& name) { return HostOfAuthority(name) == host; });
    if (!allowed) {
      return absl::PermissionDeniedError(absl::StrCat(
          "Host '", View(request.host), "' is not a loopback name: without --auth_tokens_file this server answers "
          "only requests addressed to localhost or 127.0.0.1 (a web page could otherwise reach it through "
          "a name of its own); add the name to --http_allowed_hosts, or turn tokens on"));
    }
  }
  if (!request.is_write) return absl::OkStatus();
  if (absl::EqualsIgnoreCase(View(request.sec_fetch_site), "cross-site")) {
    return absl::PermissionDeniedError("a request from another site's page may not change anything here");
  }
  if (!request.origin.empty()) {
    const std::string origin = OriginAuthority(request.origin);
    if (origin.empty() || !SameAuthority(request.host, origin)) {
      return absl::PermissionDeniedError(absl::StrCat("Origin '", View(request.origin),
                                                      "' is not this server: a page from elsewhere may not change anything here"));
    }
  }
  if (request.has_body && !IsJsonMediaType(request.content_type)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a ", View(request.method), " body must be sent as Content-Type: application/json (got '",
        request.content_type.empty() ? absl::string_view("none") : View(request.content_type), "')"));
  }
  return absl::OkStatus();
}

}  // namespace fleetprof
