#include "server/fleet/trigger_operations.h"

namespace fleetprof {

void AddTriggerOperations(TriggerStore* store, TriggerRunner* runner, Operations* ops) {
  using namespace v1;  // NOLINT: the message names read as in the .proto files
  ops->AddUnary<AddTriggerRequest, Trigger>("fleetprof.v1.TriggerService.AddTrigger",
                                            [store, runner](const AddTriggerRequest& r, const Principal& caller) {
                                              absl::StatusOr<Trigger> added = store->Add(r, caller);
                                              if (added.ok()) runner->Nudge();
                                              return added;
                                            });
  ops->AddUnary<ListTriggersRequest, ListTriggersResponse>("fleetprof.v1.TriggerService.ListTriggers",
                                                           [store](const auto& r) { return store->List(r); });
  ops->AddUnary<DeleteTriggerRequest, DeleteTriggerResponse>(
      "fleetprof.v1.TriggerService.DeleteTrigger",
      [store, runner](const DeleteTriggerRequest& r, const Principal& caller) {
        absl::StatusOr<DeleteTriggerResponse> deleted = store->Delete(r, caller);
        if (deleted.ok()) runner->Nudge();
        return deleted;
      });
}

}  // namespace fleetprof
