#pragma once
// The triggers (`fleetprof trigger add|rm`, `fleetprof triggers`), kept in the catalog so they
// survive restarts and every replica of a cluster sees the same ones: in the index table under
// "trg/" + trigger id (beside the profile indexes "t/", "j/", "l/" and the regression keys).
// The catalog is the truth; nothing is cached here, so a trigger added through one replica is
// listed (and fires) through every other at once. A firing updates its trigger by
// compare-and-set (ClaimFiring): of two replicas that see one condition, one starts a capture.
// Transport-free: the gRPC TriggerService and the HTTP API both call these.

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "auth/scopes.h"
#include "common/clock.h"
#include "fleetprof/v1/trigger.pb.h"
#include "storage/catalog.h"
#include "storage/record_table.h"

namespace fleetprof {

class TriggerStore {
 public:
  static constexpr int kMaxTriggers = 1000;
  static constexpr int64_t kDefaultCooldownMs = 10 * 60 * 1000;
  static constexpr int64_t kMaxCooldownMs = int64_t{7} * 24 * 3600 * 1000;

  // `known_rules`: the diagnosis rules a `rule NAME` may name. Neither pointer is owned.
  TriggerStore(Catalog* catalog, UnreadableLog* unreadable, Clock* clock, std::vector<std::string> known_rules)
      : catalog_(catalog),
        records_(catalog, CatalogTable::kIndex, "trigger", unreadable),
        clock_(clock),
        known_rules_(std::move(known_rules)) {}

  // A trigger of `caller`, who may remove it later. INVALID_ARGUMENT (showing the grammar)
  // for a bad condition; RESOURCE_EXHAUSTED past kMaxTriggers.
  absl::StatusOr<v1::Trigger> Add(const v1::AddTriggerRequest& request, const Principal& caller);
  // Every trigger (of `request.job()` when set), oldest first.
  absl::StatusOr<v1::ListTriggersResponse> List(const v1::ListTriggersRequest& request);
  // PERMISSION_DENIED unless `caller` added it or holds the admin scope; NOT_FOUND when absent.
  absl::StatusOr<v1::DeleteTriggerResponse> Delete(const v1::DeleteTriggerRequest& request, const Principal& caller);

  // The stored trigger; nullopt when there is none.
  absl::StatusOr<std::optional<v1::Trigger>> Find(const std::string& trigger_id) const {
    return records_.Find(Key(trigger_id));
  }

  // Applies `change` to the stored trigger and writes it only if nobody wrote it meanwhile
  // (re-read and retried a few times when another replica did). `change` returns false to
  // write nothing. Returns the trigger as stored after, or nullopt when it is gone or
  // `change` declined; ABORTED after the retries.
  absl::StatusOr<std::optional<v1::Trigger>> Update(const std::string& trigger_id,
                                                    const std::function<bool(v1::Trigger&)>& change);

 private:
  static std::string Key(const std::string& trigger_id) { return "trg/" + trigger_id; }

  Catalog* catalog_;
  RecordTable<v1::Trigger> records_;
  Clock* clock_;
  const std::vector<std::string> known_rules_;
};

}  // namespace fleetprof
