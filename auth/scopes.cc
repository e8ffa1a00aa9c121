#include "auth/scopes.h"

#include <array>

namespace fleetprof {
namespace {

constexpr std::array<const char*, 5> kScopeNames = {"read", "ingest", "capture", "agent", "admin"};

}  // namespace

std::optional<Scope> ScopeFromName(std::string_view name) {
  for (size_t i = 0; i < kScopeNames.size(); ++i) {
    if (name == kScopeNames[i]) return static_cast<Scope>(i);
  }
  return std::nullopt;
}

const char* ScopeName(Scope scope) { return kScopeNames[static_cast<size_t>(scope)]; }

Principal AnonymousPrincipal() {
  Principal p;
  p.name = "anonymous";
  p.scopes = (1u << kScopeNames.size()) - 1;
  return p;
}

}  // namespace fleetprof
