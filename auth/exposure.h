#pragma once
// Whether a listener may start on its address: anything beyond loopback needs tokens, and
// tokens need TLS there, unless the operator says --insecure (docs/security.md, Defaults).

#include <string>

#include "absl/status/status.h"
#include "common/net_address.h"  // IsLoopbackAddress

namespace fleetprof {

struct ListenerSecurity {
  bool tokens = false;    // a tokens file is configured
  bool tls = false;       // this listener speaks TLS
  bool insecure = false;  // --insecure: the operator accepts an exposed listener
};

// FAILED_PRECONDITION with a one-line reason naming `flag` when the listener is exposed
// without the protection it needs.
absl::Status CheckExposure(const std::string& flag, const std::string& address, const ListenerSecurity& security);

}  // namespace fleetprof
