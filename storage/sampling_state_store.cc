#include "storage/sampling_state_store.h"

#include <string_view>

namespace fleetprof {
namespace {

// In the index table (storage.h lists the layout): no other key starts with "sampling/".
constexpr std::string_view kStateKey = "sampling/state";

}  // namespace

absl::StatusOr<std::optional<std::string>> SamplingStateStore::LoadBytes() {
  return catalog_->Get(CatalogTable::kIndex, kStateKey);
}

absl::StatusOr<std::optional<SamplingStateStore::Stored>> SamplingStateStore::Load() {
  auto bytes = LoadBytes();
  if (!bytes.ok()) return bytes.status();
  if (!bytes->has_value()) return std::optional<Stored>();
  Stored stored;
  if (!stored.state.ParseFromString(**bytes)) return absl::DataLossError("the stored sampling state does not parse");
  stored.bytes = **std::move(bytes);
  return std::optional<Stored>(std::move(stored));
}

absl::Status SamplingStateStore::PutIfUnchanged(const v1::SamplingState& state,
                                                const std::optional<std::string>& expected) {
  CatalogWrite write;
  if (expected.has_value()) {
    write.RequireValue(CatalogTable::kIndex, std::string(kStateKey), *expected);
  } else {
    write.RequireAbsent(CatalogTable::kIndex, std::string(kStateKey));
  }
  write.Put(CatalogTable::kIndex, std::string(kStateKey), state.SerializeAsString());
  write.sync = true;  // a period's picks are on disk before its captures start
  return catalog_->Commit(write);
}

}  // namespace fleetprof
