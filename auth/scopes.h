#pragma once
// Who may do what (docs/security.md, Who can do what): five scopes, and the principal
// a request acts as once its token has been checked.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace fleetprof {

enum class Scope : uint8_t {
  kRead = 0,     // queries: profiles, breakdowns, agents, captures, /metrics
  kIngest = 1,   // uploads of trace files
  kCapture = 2,  // starting captures
  kAgent = 3,    // registering as a node (the principal's name is that node)
  kAdmin = 4,    // deletes and other destructive operations
};

// "read", "ingest", … ; nullopt for an unknown name.
std::optional<Scope> ScopeFromName(std::string_view name);
const char* ScopeName(Scope scope);

struct Principal {
  std::string name;      // from the tokens file; "anonymous" when authentication is off
  uint32_t scopes = 0;   // bit (1 << Scope)
  bool authenticated = false;  // false: authentication is off and every request is allowed
  std::string token_hash;      // SHA-256 hex of the token it presented (authenticated only)

  bool Has(Scope scope) const { return (scopes >> static_cast<int>(scope)) & 1u; }
  // The node an agent principal may register as; empty for every other principal.
  std::string_view node() const { return authenticated && Has(Scope::kAgent) ? std::string_view(name) : ""; }
};

// The principal of every request while no tokens file is configured: all scopes.
Principal AnonymousPrincipal();

}  // namespace fleetprof
