#pragma once
// The triggers (`fleetprof trigger add|rm`, `fleetprof triggers`): what a trigger may be, and
// who may remove one. Kept in the catalog (storage/trigger_table.h), which is the truth: nothing
// is cached here, so a trigger added through one replica is listed (and fires) through every
// other at once, and a firing claims its trigger by compare-and-set (Update): of two replicas
// that see one condition, one starts a capture.
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
#include "storage/trigger_table.h"

namespace fleetprof {

class TriggerStore {
 public:
  static constexpr int kMaxTriggers = 1000;
  static constexpr int64_t kDefaultCooldownMs = 10 * 60 * 1000;
  static constexpr int64_t kMaxCooldownMs = int64_t{7} * 24 * 3600 * 1000;

  // `known_rules`: the diagnosis rules a `rule NAME` may name. Neither pointer is owned.
  TriggerStore(TriggerTable* table, Clock* clock, std::vector<std::string> known_rules)
      : table_(table), clock_(clock), known_rules_(std::move(known_rules)) {}

  // A trigger of `caller`, who may remove it later. INVALID_ARGUMENT (showing the grammar)
  // for a bad condition; RESOURCE_EXHAUSTED past kMaxTriggers.
  absl::StatusOr<v1::Trigger> Add(const v1::AddTriggerRequest& request, const Principal& caller);
  // Every trigger (of `request.job()` when set), oldest first.
  absl::StatusOr<v1::ListTriggersResponse> List(const v1::ListTriggersRequest& request);
  // PERMISSION_DENIED unless `caller` added it or holds the admin scope; NOT_FOUND when absent.
  absl::StatusOr<v1::DeleteTriggerResponse> Delete(const v1::DeleteTriggerRequest& request, const Principal& caller);

  // The stored trigger; nullopt when there is none.
  absl::StatusOr<std::optional<v1::Trigger>> Find(const std::string& trigger_id) const {
    return table_->Find(trigger_id);
  }
  // TriggerTable::Update: `change` applied by compare-and-set.
  absl::StatusOr<std::optional<v1::Trigger>> Update(const std::string& trigger_id,
                                                    const std::function<bool(v1::Trigger&)>& change) {
    return table_->Update(trigger_id, change);
  }

 private:
  TriggerTable* table_;
  Clock* clock_;
  const std::vector<std::string> known_rules_;
};

}  // namespace fleetprof
