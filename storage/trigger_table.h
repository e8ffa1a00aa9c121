#pragma once
// The triggers (server/fleet/trigger_store.h), in the catalog's index table under "trg/" +
// trigger id, beside the profile indexes: every replica of a cluster reads the same ones. Writes
// are synced (an acknowledged trigger survives a crash); a firing updates its trigger by
// compare-and-set (Update), so of two replicas that fire it at once one wins.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "fleetprof/v1/trigger.pb.h"
#include "storage/catalog.h"
#include "storage/record_table.h"

namespace fleetprof {

class TriggerTable {
 public:
  TriggerTable(Catalog* catalog, UnreadableLog* unreadable)
      : catalog_(catalog), records_(catalog, CatalogTable::kIndex, "trigger", unreadable) {}

  // nullopt when there is no such trigger.
  absl::StatusOr<std::optional<v1::Trigger>> Find(const std::string& trigger_id) const {
    return records_.Find(Key(trigger_id));
  }
  // Every readable trigger, in id order (ids start with their creation time: oldest first).
  absl::StatusOr<std::vector<v1::Trigger>> List();
  // Stores a new trigger; ABORTED when its id is taken.
  absl::Status Add(const v1::Trigger& trigger);
  absl::Status Delete(const std::string& trigger_id) { return records_.Delete(Key(trigger_id), /*sync=*/true); }
  // Applies `change` to the stored trigger and writes it only if nobody wrote it meanwhile
  // (re-read and retried a few times when another replica did). `change` returns false to
  // write nothing, and may run more than once. Returns the trigger as stored after, or nullopt
  // when it is gone or `change` declined; ABORTED after the retries.
  absl::StatusOr<std::optional<v1::Trigger>> Update(const std::string& trigger_id,
                                                    const std::function<bool(v1::Trigger&)>& change);

 private:
  static std::string Key(const std::string& trigger_id) { return "trg/" + trigger_id; }

  Catalog* catalog_;
  RecordTable<v1::Trigger> records_;
};

}  // namespace fleetprof
