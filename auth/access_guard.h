#pragma once
// The one place that decides whether a request may proceed: its bearer token names a
// principal (server flag --auth_tokens_file), and the principal must hold the scope the
// operation needs. Transport-free: the gRPC and HTTP edges pass the `authorization` value
// they received and turn the answer into their own status.
//
// Tokens file: one principal per line, `SHA256HEX SCOPES NAME`, scopes comma-separated from
// read, ingest, capture, agent, admin; `#` starts a comment. An `agent` principal's name is
// the one node it may register as. Reload() re-reads it (the server calls it on SIGHUP); a
// file with an error is refused as a whole and the previous principals stay in force.

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "auth/scopes.h"

namespace fleetprof {

class AccessGuard {
 public:
  // Authentication off: every request acts as AnonymousPrincipal().
  AccessGuard() = default;
  // Authentication on, with the principals of `tokens_file`.
  static absl::StatusOr<std::unique_ptr<AccessGuard>> FromTokensFile(const std::string& tokens_file);

  bool enabled() const { return !tokens_file_.empty(); }
  size_t principal_count() const;

  // Re-reads the tokens file. On error the principals loaded before stay in force.
  absl::Status Reload();

  // `authorization`: the request's header or metadata value ("Bearer TOKEN"), empty if absent.
  // UNAUTHENTICATED without a known token, PERMISSION_DENIED without scope `need`.
  absl::StatusOr<Principal> Authorize(std::string_view authorization, Scope need) const;

  // Whether `principal`, authorized earlier, would still be authorized for `need` (its token
  // not revoked by a reload). Always true while authentication is off.
  bool StillValid(const Principal& principal, Scope need) const;

 private:
  using Principals = std::unordered_map<std::string, Principal>;  // by token SHA-256 hex
  static absl::StatusOr<Principals> Parse(const std::string& path);

  std::string tokens_file_;
  mutable absl::Mutex mu_;  // readers share it (ReaderMutexLock); Reload writes
  std::shared_ptr<const Principals> principals_ ABSL_GUARDED_BY(mu_);
};

// Parses "Bearer TOKEN" (scheme case-insensitive); empty when the value is not of that form.
std::string_view BearerToken(std::string_view authorization);

}  // namespace fleetprof
