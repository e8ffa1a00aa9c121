#include "storage/trigger_table.h"

#include "absl/strings/str_cat.h"

namespace fleetprof {
namespace {

constexpr int kUpdateTries = 8;
constexpr char kPrefix[] = "trg/";

}  // namespace

absl::StatusOr<std::vector<v1::Trigger>> TriggerTable::List() {
  std::vector<v1::Trigger> all;
  CatalogScan scan;
  scan.prefix = kPrefix;
  absl::Status s = records_.ForEach(scan, [&](std::string_view, v1::Trigger& trigger) {
    all.push_back(std::move(trigger));
    return true;
  });
  if (!s.ok()) return s;
  return all;
}

absl::Status TriggerTable::Add(const v1::Trigger& trigger) {
  CatalogWrite write;
  write.RequireAbsent(CatalogTable::kIndex, Key(trigger.trigger_id()));
  records_.Put(write, Key(trigger.trigger_id()), trigger);
  write.sync = true;
  return catalog_->Commit(write);
}

absl::StatusOr<std::optional<v1::Trigger>> TriggerTable::Update(const std::string& trigger_id,
                                                                const std::function<bool(v1::Trigger&)>& change) {
  const std::string key = Key(trigger_id);
  for (int attempt = 0; attempt < kUpdateTries; ++attempt) {
    auto bytes = catalog_->Get(CatalogTable::kIndex, key);
    if (!bytes.ok()) return bytes.status();
    if (!bytes->has_value()) return std::optional<v1::Trigger>();
    v1::Trigger trigger;
    if (!trigger.ParseFromString(**bytes)) {
      return absl::DataLossError(absl::StrCat("trigger ", trigger_id, ": stored record does not parse"));
    }
    if (!change(trigger)) return std::optional<v1::Trigger>();
    CatalogWrite write;
    write.RequireValue(CatalogTable::kIndex, key, **bytes);
    records_.Put(write, key, trigger);
    absl::Status s = catalog_->Commit(write);
    if (s.ok()) return std::optional<v1::Trigger>(std::move(trigger));
    if (!absl::IsAborted(s)) return s;  // ABORTED: another replica wrote it first; read again
  }
  return absl::AbortedError(
      absl::StrCat("trigger ", trigger_id, ": changed by others ", kUpdateTries, " times in a row"));
}

}  // namespace fleetprof
