#pragma once
// Profiles side by side (docs/using.md, Comparisons, job views and diagnosis): one row per op,
// kernel or scope name found in any of them, each profile's own row as stored (or null), a status
// of the last profile against the first. Pure: the caller fetches the summaries.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "fleetprof/v1/compare.pb.h"
#include "fleetprof/v1/profile.pb.h"

namespace fleetprof::compare {

inline constexpr int kMinDiffProfiles = 2;
inline constexpr int kMaxDiffProfiles = 16;

enum class DiffBy { kOp, kKernel, kScope };

// "op" (or empty), "kernel", "scope"; INVALID_ARGUMENT naming the choices otherwise.
absl::StatusOr<DiffBy> ParseDiffBy(const std::string& by);
const char* DiffByName(DiffBy by);

struct DiffInput {
  std::string profile_id;
  const v1::ProfileSummary* summary;
};

// INVALID_ARGUMENT when a profile cannot be compared that way: by op or scope, an XSpace
// profile (no host ops or user annotations are read from XSpace). `limit` 0 keeps every row.
absl::StatusOr<v1::DiffResponse> DiffProfiles(const std::vector<DiffInput>& profiles, DiffBy by, int limit);

}  // namespace fleetprof::compare
