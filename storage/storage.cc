#include "storage/storage.h"

#include <algorithm>
#include <iterator>
#include <set>
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
      schedules_(&engine_->catalog(), &unreadable_),
      regressions_(&engine_->catalog(), &unreadable_),
      triggers_(&engine_->catalog(), &unreadable_) {}

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

namespace {

// Every blob no catalog record owns, by kind.
absl::StatusOr<Storage::Orphans> FindOrphans(Catalog& catalog, BlobStore& blobs) {
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
  Storage::Orphans orphans;
  auto segments = Unowned([&](const BlobVisitor& v) { return blobs.ListSegments(v); }, is_profile);
  if (!segments.ok()) return segments.status();
  orphans.segments.insert(segments->begin(), segments->end());
  auto summaries = Unowned([&](const BlobVisitor& v) { return blobs.ListObjects(v); }, is_profile);
  if (!summaries.ok()) return summaries.status();
  orphans.summaries.insert(summaries->begin(), summaries->end());
  auto parts = Unowned([&](const BlobVisitor& v) { return blobs.ListParts(v); }, is_upload);
  if (!parts.ok()) return parts.status();
  orphans.uploads.insert(parts->begin(), parts->end());
  return orphans;
}

absl::StatusOr<int> DeleteOrphans(BlobStore& blobs, const Storage::Orphans& orphans) {
  for (const auto& id : orphans.segments) {
    if (absl::Status s = blobs.DeleteSegment(id, Reclaim::kLater); !s.ok()) return s;
  }
  for (const auto& id : orphans.summaries) {
    if (absl::Status s = blobs.DeleteObject(id); !s.ok()) return s;
  }
  for (const auto& id : orphans.uploads) {
    if (absl::Status s = blobs.DeleteParts(id, Reclaim::kLater); !s.ok()) return s;
  }
  return static_cast<int>(orphans.segments.size() + orphans.summaries.size() + orphans.uploads.size());
}

std::set<std::string> Both(const std::set<std::string>& a, const std::set<std::string>& b) {
  std::set<std::string> out;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::inserter(out, out.end()));
  return out;
}

}  // namespace

absl::StatusOr<int> Storage::CollectOrphans() {
  auto orphans = FindOrphans(engine_->catalog(), engine_->blobs());
  if (!orphans.ok()) return orphans.status();
  return DeleteOrphans(engine_->blobs(), *orphans);
}

absl::StatusOr<int> Storage::CollectOrphansSeenTwice(Orphans* seen) {
  auto now = FindOrphans(engine_->catalog(), engine_->blobs());
  if (!now.ok()) return now.status();
  Orphans twice{Both(now->segments, seen->segments), Both(now->summaries, seen->summaries),
                Both(now->uploads, seen->uploads)};
  *seen = *std::move(now);
  auto deleted = DeleteOrphans(engine_->blobs(), twice);
  if (!deleted.ok()) return deleted.status();
  for (const auto& id : twice.segments) seen->segments.erase(id);
  for (const auto& id : twice.summaries) seen->summaries.erase(id);
  for (const auto& id : twice.uploads) seen->uploads.erase(id);
  return deleted;
}

}  // namespace fleetprof
