#include "storage/storage.h"

#include <vector>

#include "storage/memory_engine.h"

namespace fleetprof {

absl::StatusOr<std::unique_ptr<Storage>> Storage::Open(const std::string& dir, const StoreOptions& options) {
  auto engine = OpenRocksEngine(dir, options);
  if (!engine.ok()) return engine.status();
  return std::make_unique<Storage>(*std::move(engine));
}

std::unique_ptr<Storage> Storage::InMemory() { return std::make_unique<Storage>(NewMemoryEngine()); }

Storage::Storage(std::unique_ptr<StorageEngine> engine)
    : engine_(std::move(engine)),
      profiles_(&engine_->catalog(), &engine_->blobs(), &unreadable_),
      uploads_(&engine_->catalog(), &engine_->blobs(), &unreadable_),
      events_(&engine_->blobs()),
      agents_(&engine_->catalog(), &unreadable_),
      captures_(&engine_->catalog(), &unreadable_),
      schedules_(&engine_->catalog(), &unreadable_) {}

namespace {

// The names `list` reports for which `owned` says no (a catalog lookup), collected first so that
// the deletions do not run inside the engine's listing.
absl::StatusOr<std::vector<std::string>> Unowned(
    const std::function<absl::Status(const BlobVisitor&)>& list,
    const std::function<absl::StatusOr<bool>(const std::string&)>& owned) {
  std::vector<std::string> names;
  absl::Status lookup;
  absl::Status s = list([&](std::string_view name) {
    auto has = owned(std::string(name));
    if (!has.ok()) {
      lookup = has.status();
      return false;
    }
    if (!*has) names.emplace_back(name);
    return true;
  });
  if (!s.ok()) return s;
  if (!lookup.ok()) return lookup;
  return names;
}

}  // namespace

absl::StatusOr<int> Storage::CollectOrphans() {
  Catalog& catalog = engine_->catalog();
  BlobStore& blobs = engine_->blobs();
  // Whether `table` holds a record named `id`: the owner a blob needs.
  auto has_record = [&](CatalogTable table) {
    return [&catalog, table](const std::string& id) -> absl::StatusOr<bool> {
      auto found = catalog.Get(table, id);
      if (!found.ok()) return found.status();
      return found->has_value();
    };
  };
  const auto is_profile = has_record(CatalogTable::kProfiles);
  const auto is_upload = has_record(CatalogTable::kUploads);
  int n = 0;
  auto segments = Unowned([&](const BlobVisitor& v) { return blobs.ListSegments(v); }, is_profile);
  if (!segments.ok()) return segments.status();
  for (const auto& id : *segments) {
    if (absl::Status s = blobs.DeleteSegment(id, Reclaim::kLater); !s.ok()) return s;
  }
  n += static_cast<int>(segments->size());
  auto summaries = Unowned([&](const BlobVisitor& v) { return blobs.ListObjects(v); }, is_profile);
  if (!summaries.ok()) return summaries.status();
  for (const auto& id : *summaries) {
    if (absl::Status s = blobs.DeleteObject(id); !s.ok()) return s;
  }
  n += static_cast<int>(summaries->size());
  auto parts = Unowned([&](const BlobVisitor& v) { return blobs.ListParts(v); }, is_upload);
  if (!parts.ok()) return parts.status();
  for (const auto& id : *parts) {
    if (absl::Status s = blobs.DeleteParts(id, Reclaim::kLater); !s.ok()) return s;
  }
  n += static_cast<int>(parts->size());
  return n;
}

}  // namespace fleetprof
