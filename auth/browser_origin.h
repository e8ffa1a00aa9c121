#pragma once
// What a web page in the user's browser must not be able to do to a server on their machine:
// a page on another site can send a "simple" POST (text/plain, no preflight) to 127.0.0.1,
// and with DNS rebinding (its own name resolving to 127.0.0.1) it can read the answers too.
// Tokens stop both, since a page cannot learn the bearer token; without tokens these rules
// are what stands between a malicious page and the API. Transport-free: the HTTP edge hands
// in the values of the request's headers.

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace fleetprof {

struct BrowserRequest {
  std::string_view method;          // "GET", "POST", …
  bool is_write = false;            // the operation changes something (its scope is not read)
  bool has_body = false;
  std::string_view content_type;    // header values, "" when absent
  std::string_view origin;
  std::string_view sec_fetch_site;
  std::string_view host;
};

struct BrowserPolicy {
  bool tokens = false;                      // authentication is on
  std::vector<std::string> allowed_hosts;   // --http_allowed_hosts: names beyond loopback
};

// OK, or:
//  - INVALID_ARGUMENT: a write with a body whose Content-Type is not application/json (the
//    one type a cross-site page cannot send without the browser asking first);
//  - PERMISSION_DENIED: a write whose Origin is not the server's own (Host) or whose
//    Sec-Fetch-Site is cross-site; without tokens, any request whose Host is neither a
//    loopback name nor one of `allowed_hosts` (with or without a port). A request without a
//    Host header comes from no browser and passes that rule.
absl::Status CheckBrowserRequest(const BrowserRequest& request, const BrowserPolicy& policy);

// "host:port", "[v6]:port" or "host" → the host, lower case, without brackets.
std::string HostOfAuthority(std::string_view authority);

}  // namespace fleetprof
