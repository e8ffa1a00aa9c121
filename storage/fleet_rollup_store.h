#pragma once
// What fleet accounting (server/fleet/fleet_rollups.h) keeps at commit, in the catalog's index
// table under a prefix of its own, beside the profile indexes ("t/", "j/", "l/") and the
// regression points ("h/", "r/"):
//   "f/" by \0 be64(hour + 2^63) job \0 {be32(len) key be32(len) value}...  -> FleetRollupCell
// One record per grouping (`by`) of each (hour, job, labels) cell, so a query of one grouping
// reads only its own records, in hour order from the window's first hour. A cell's records are
// written together under a compare-and-set (replicas of a cluster may commit the same job's
// profiles at once). Records of old hours go with ExpireBefore.

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "fleetprof/v1/fleet.pb.h"
#include "storage/catalog.h"
#include "storage/record_table.h"

namespace fleetprof {

struct FleetCellId {
  int64_t hour = 0;
  std::string job;
  std::map<std::string, std::string> labels;
};

class FleetRollupStore {
 public:
  static constexpr int kMaxAttempts = 8;  // compare-and-set tries of one update

  FleetRollupStore(Catalog* catalog, UnreadableLog* unreadable) : catalog_(catalog), unreadable_(unreadable) {}

  // Reads the records of `id` for each grouping in `by` (an absent one comes empty with its
  // by, hour, job and labels set), lets `change` edit them in that order, and writes them back
  // in one commit (not synced) that holds only if none changed meanwhile; tries again when one
  // did.
  // ABORTED after kMaxAttempts lost races.
  absl::Status Update(const FleetCellId& id, const std::vector<std::string>& by,
                      const std::function<void(std::vector<v1::FleetRollupCell>&)>& change);
  // Visits the records of grouping `by` from `first_hour` on, in hour order; `visit` returns
  // false to stop. A record that does not parse is reported and skipped.
  absl::Status Scan(const std::string& by, int64_t first_hour,
                    const std::function<bool(const v1::FleetRollupCell&)>& visit);
  // Deletes the records of every grouping in `by` whose hour is before `hour`; how many went.
  absl::StatusOr<int64_t> ExpireBefore(const std::vector<std::string>& by, int64_t hour);

  // The key of one record (tests check the layout with it).
  static std::string Key(const std::string& by, const FleetCellId& id);

 private:
  Catalog* catalog_;
  UnreadableLog* unreadable_;
};

}  // namespace fleetprof
