#include "auth/access_guard.h"

#include <mutex>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "auth/token_hash.h"
#include "common/operator_file.h"

namespace fleetprof {
namespace {

constexpr size_t kMaxTokensFileBytes = 4 << 20;

bool IsLowerHex(std::string_view text) {
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// A principal's name is also the node an agent registers as: keep it to node-name characters.
bool IsValidName(std::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') return false;
  }
  return true;
}

std::string ScopeList(uint32_t scopes) {
  std::vector<std::string> names;
  for (int i = 0; i < 5; ++i) {
    if ((scopes >> i) & 1u) names.push_back(ScopeName(static_cast<Scope>(i)));
  }
  return names.empty() ? "none" : absl::StrJoin(names, ",");
}

// Whoever may write the tokens file may grant themselves every scope (common/operator_file.h).
// It holds hashes of the tokens, no secret.
absl::StatusOr<std::string> ReadTokensFile(const std::string& path) {
  return ReadOperatorFile({.what = "tokens file", .max_bytes = kMaxTokensFileBytes}, path);
}

}  // namespace

std::string_view BearerToken(std::string_view authorization) {
  const absl::string_view value(authorization.data(), authorization.size());
  constexpr absl::string_view kScheme = "bearer ";
  if (value.size() <= kScheme.size() || !absl::EqualsIgnoreCase(value.substr(0, kScheme.size()), kScheme)) {
    return {};
  }
  const absl::string_view token = absl::StripAsciiWhitespace(value.substr(kScheme.size()));
  return std::string_view(token.data(), token.size());
}

absl::StatusOr<AccessGuard::Principals> AccessGuard::Parse(const std::string& path) {
  auto text = ReadTokensFile(path);
  if (!text.ok()) return text.status();
  Principals principals;
  int line_number = 0;
  const std::string& contents = *text;
  for (absl::string_view line : absl::StrSplit(contents, '\n')) {
    ++line_number;
    line = line.substr(0, line.find('#'));
    std::vector<absl::string_view> fields = absl::StrSplit(line, absl::ByAnyChar(" \t\r"), absl::SkipEmpty());
    if (fields.empty()) continue;
    const auto fail = [&](absl::string_view why) {
      return absl::InvalidArgumentError(absl::StrCat(path, ":", line_number, ": ", why,
                                                     " (want: SHA256HEX SCOPES NAME)"));
    };
    if (fields.size() != 3) return fail("expected three fields");
    if (fields[0].size() != 64 || !IsLowerHex(std::string_view(fields[0].data(), fields[0].size()))) {
      return fail("the first field must be the token's SHA-256 in lowercase hex (sha256sum)");
    }
    Principal principal;
    principal.authenticated = true;
    for (absl::string_view name : absl::StrSplit(fields[1], ',', absl::SkipEmpty())) {
      std::optional<Scope> scope = ScopeFromName(std::string_view(name.data(), name.size()));
      if (!scope) return fail(absl::StrCat("unknown scope '", name, "' (scopes: read, ingest, capture, agent, admin)"));
      principal.scopes |= 1u << static_cast<int>(*scope);
    }
    if (principal.scopes == 0) return fail("no scope");
    if (!IsValidName(std::string_view(fields[2].data(), fields[2].size()))) return fail("the name must be 1-253 characters of A-Z a-z 0-9 . _ -");
    principal.name = std::string(fields[2]);
    if (!principals.emplace(std::string(fields[0]), std::move(principal)).second) {
      return fail("the same token hash appears twice");
    }
  }
  return principals;
}

absl::StatusOr<std::unique_ptr<AccessGuard>> AccessGuard::FromTokensFile(const std::string& tokens_file) {
  auto guard = std::make_unique<AccessGuard>();
  guard->tokens_file_ = tokens_file;
  if (absl::Status s = guard->Reload(); !s.ok()) return s;
  return guard;
}

size_t AccessGuard::principal_count() const {
  absl::ReaderMutexLock lock(&mu_);
  return principals_ ? principals_->size() : 0;
}

absl::Status AccessGuard::Reload() {
  if (!enabled()) return absl::OkStatus();
  auto parsed = Parse(tokens_file_);
  if (!parsed.ok()) return parsed.status();
  auto fresh = std::make_shared<const Principals>(*std::move(parsed));
  absl::WriterMutexLock lock(&mu_);
  principals_ = std::move(fresh);
  return absl::OkStatus();
}

absl::StatusOr<Principal> AccessGuard::Authorize(std::string_view authorization, Scope need) const {
  if (!enabled()) return AnonymousPrincipal();
  if (authorization.empty()) {
    return absl::UnauthenticatedError(
        "this server requires a token: send 'authorization: Bearer TOKEN' (fleetprof and "
        "fleetprof-agent read --token_file or $FLEETPROF_TOKEN)");
  }
  std::string_view token = BearerToken(authorization);
  if (token.empty()) return absl::UnauthenticatedError("the authorization value must be 'Bearer TOKEN'");
  const std::string hash = Sha256Hex(token);
  std::shared_ptr<const Principals> principals;
  {
    absl::ReaderMutexLock lock(&mu_);
    principals = principals_;
  }
  auto it = principals->find(hash);
  if (it == principals->end()) {
    return absl::UnauthenticatedError("the token is not known to this server (revoked, or not in its tokens file)");
  }
  if (!it->second.Has(need)) {
    return absl::PermissionDeniedError(absl::StrCat("principal '", it->second.name, "' has scopes ",
                                                    ScopeList(it->second.scopes), "; this needs '",
                                                    ScopeName(need), "'"));
  }
  Principal principal = it->second;
  principal.token_hash = hash;
  return principal;
}

bool AccessGuard::StillValid(const Principal& principal, Scope need) const {
  if (!enabled()) return true;
  if (!principal.authenticated) return false;
  absl::ReaderMutexLock lock(&mu_);
  auto it = principals_->find(principal.token_hash);
  return it != principals_->end() && it->second.name == principal.name && it->second.Has(need);
}

}  // namespace fleetprof
