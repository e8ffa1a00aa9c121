#pragma once
// The sampling policy's state (SamplingState, server/fleet/sampler.h): one record in the
// catalog's index table, read with its bytes and written only while they are unchanged, so two
// replicas that both think they lead never both run a period.

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "fleetprof/v1/sampling.pb.h"
#include "storage/catalog.h"

namespace fleetprof {

class SamplingStateStore {
 public:
  explicit SamplingStateStore(Catalog* catalog) : catalog_(catalog) {}

  struct Stored {
    v1::SamplingState state;
    std::string bytes;  // as stored: PutIfUnchanged's `expected`
  };
  // nullopt when no policy was ever set; DATA_LOSS when the record does not parse.
  absl::StatusOr<std::optional<Stored>> Load();
  // The record's bytes whether or not they parse (a new policy replaces a damaged one).
  absl::StatusOr<std::optional<std::string>> LoadBytes();
  // Writes `state` (synced) if the stored bytes are still `expected` (nullopt: no record);
  // ABORTED when another writer got there first.
  absl::Status PutIfUnchanged(const v1::SamplingState& state, const std::optional<std::string>& expected);

 private:
  Catalog* catalog_;
};

}  // namespace fleetprof
