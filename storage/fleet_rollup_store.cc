#include "storage/fleet_rollup_store.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "storage/store_keys.h"

namespace fleetprof {
namespace {

constexpr std::string_view kPrefix = "f/";

std::string GroupingPrefix(const std::string& by) { return std::string(kPrefix) + by + std::string(1, '\0'); }

// Hours in key order, negative ones (before 1970) first.
std::string HourBytes(int64_t hour) {
  return store_keys::BigEndian64(static_cast<uint64_t>(hour) ^ (uint64_t{1} << 63));
}

void AppendLengthPrefixed(std::string* out, std::string_view s) {
  const auto n = static_cast<uint32_t>(s.size());
  for (int shift = 24; shift >= 0; shift -= 8) out->push_back(static_cast<char>((n >> shift) & 0xff));
  out->append(s);
}

}  // namespace

std::string FleetRollupStore::Key(const std::string& by, const FleetCellId& id) {
  std::string key = GroupingPrefix(by);
  key += HourBytes(id.hour);
  key += id.job;
  key.push_back('\0');
  for (const auto& [k, v] : id.labels) {  // a std::map: one order, one key per label set
    AppendLengthPrefixed(&key, k);
    AppendLengthPrefixed(&key, v);
  }
  return key;
}

absl::Status FleetRollupStore::Update(const FleetCellId& id, const std::vector<std::string>& by,
                                      const std::function<void(std::vector<v1::FleetRollupCell>&)>& change) {
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    std::vector<v1::FleetRollupCell> cells(by.size());
    CatalogWrite write;
    // Not synced: the write-ahead log still has it when the process dies; only a crash of the
    // machine can lose the last increments (the profile's own commit, synced, survives), and a
    // sync per commit would double the commit's fsyncs.
    write.sync = false;
    for (size_t i = 0; i < by.size(); ++i) {
      std::string key = Key(by[i], id);
      absl::StatusOr<std::optional<std::string>> old = catalog_->Get(CatalogTable::kIndex, key);
      if (!old.ok()) return old.status();
      v1::FleetRollupCell& cell = cells[i];
      if (old->has_value()) {
        if (!cell.ParseFromString(**old)) {
          unreadable_->Report("fleet rollup", key);  // counted afresh: the old sums are lost
          cell.Clear();
        }
        write.RequireValue(CatalogTable::kIndex, key, **old);
      } else {
        write.RequireAbsent(CatalogTable::kIndex, key);
      }
      cell.set_by(by[i]);
      cell.set_hour(id.hour);
      cell.set_job(id.job);
      cell.mutable_labels()->clear();
      for (const auto& [k, v] : id.labels) (*cell.mutable_labels())[k] = v;
    }
    change(cells);
    for (size_t i = 0; i < by.size(); ++i) write.Put(CatalogTable::kIndex, Key(by[i], id), cells[i].SerializeAsString());
    absl::Status s = catalog_->Commit(write);
    if (!absl::IsAborted(s)) return s;
  }
  return absl::AbortedError(
      absl::StrCat("fleet rollup of job ", id.job, " hour ", id.hour, ": lost ", kMaxAttempts, " races to other writers"));
}

absl::Status FleetRollupStore::Scan(const std::string& by, int64_t first_hour,
                                    const std::function<bool(const v1::FleetRollupCell&)>& visit) {
  CatalogScan scan;
  scan.prefix = GroupingPrefix(by);
  // Strictly after the hour's bare bytes: every key of that hour goes on with its job.
  scan.after = scan.prefix + HourBytes(first_hour);
  v1::FleetRollupCell cell;
  return catalog_->Scan(CatalogTable::kIndex, scan, [&](std::string_view key, std::string_view value) {
    if (!cell.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
      unreadable_->Report("fleet rollup", key);
      return true;
    }
    return visit(cell);
  });
}

absl::StatusOr<int64_t> FleetRollupStore::ExpireBefore(const std::vector<std::string>& by, int64_t hour) {
  int64_t gone = 0;
  for (const std::string& b : by) {
    const std::string prefix = GroupingPrefix(b);
    const std::string end = prefix + HourBytes(hour);
    CatalogScan scan;
    scan.prefix = prefix;
    CatalogWrite write;
    absl::Status s = catalog_->Scan(CatalogTable::kIndex, scan, [&](std::string_view key, std::string_view) {
      if (key >= end) return false;
      write.Delete(CatalogTable::kIndex, std::string(key));
      return true;
    });
    if (!s.ok()) return s;
    if (write.mutations.empty()) continue;
    gone += static_cast<int64_t>(write.mutations.size());
    if (absl::Status c = catalog_->Commit(write); !c.ok()) return c;
  }
  return gone;
}

}  // namespace fleetprof
