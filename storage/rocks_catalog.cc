// The catalog's tables as RocksDB column families. A conditional commit is an optimistic
// transaction: its conditions are read with GetForUpdate, and RocksDB refuses the commit when any
// of those keys was written by anyone after the read, so there is no lock for writers to queue on.

#include <memory>

#include "absl/strings/str_cat.h"
#include "rocksdb/db.h"
#include "rocksdb/utilities/optimistic_transaction_db.h"
#include "rocksdb/utilities/transaction.h"
#include "rocksdb/write_batch.h"
#include "storage/rocks_internal.h"

namespace fleetprof::rocks {
namespace {

Family FamilyOf(CatalogTable table) {
  switch (table) {
    case CatalogTable::kProfiles: return kProfiles;
    case CatalogTable::kIndex: return kIndex;
    case CatalogTable::kUploads: return kUploads;
    case CatalogTable::kAgents: return kAgents;
    case CatalogTable::kCaptures: return kCaptures;
    case CatalogTable::kSchedules: return kSchedules;
  }
  return kDefault;
}

class RocksCatalog : public Catalog {
 public:
  RocksCatalog(rocksdb::OptimisticTransactionDB* db, const std::vector<rocksdb::ColumnFamilyHandle*>& handles)
      : db_(db), handles_(handles) {}

  absl::StatusOr<std::optional<std::string>> Get(CatalogTable table, std::string_view key) override {
    std::string value;
    rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), cf(table), rocksdb::Slice(key.data(), key.size()), &value);
    if (s.IsNotFound()) return std::optional<std::string>();
    if (!s.ok()) return ToStatus(s, absl::StrCat("read ", CatalogTableName(table)));
    return std::optional<std::string>(std::move(value));
  }

  absl::Status Scan(CatalogTable table, const CatalogScan& scan, const CatalogVisitor& visit) override {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), cf(table)));
    const rocksdb::Slice prefix(scan.prefix);
    if (!scan.reverse) {
      it->Seek(scan.after.empty() ? prefix : rocksdb::Slice(scan.after));
      if (!scan.after.empty() && it->Valid() && it->key() == rocksdb::Slice(scan.after)) it->Next();
      for (; it->Valid() && it->key().starts_with(prefix); it->Next()) {
        if (!visit(it->key().ToStringView(), it->value().ToStringView())) break;
      }
    } else {
      const std::string end = scan.after.empty() ? PrefixEnd(scan.prefix) : scan.after;
      if (end.empty()) {
        it->SeekToLast();
      } else {
        it->SeekForPrev(end);
        if (it->Valid() && it->key() == rocksdb::Slice(end)) it->Prev();
      }
      for (; it->Valid() && it->key().starts_with(prefix); it->Prev()) {
        if (!visit(it->key().ToStringView(), it->value().ToStringView())) break;
      }
    }
    return ToStatus(it->status(), absl::StrCat("scan ", CatalogTableName(table)));
  }

  absl::Status Commit(const CatalogWrite& write) override {
    rocksdb::WriteOptions options;
    options.sync = write.sync;
    if (write.conditions.empty()) {
      rocksdb::WriteBatch batch;
      for (const auto& m : write.mutations) {
        if (m.value) {
          batch.Put(cf(m.table), m.key, *m.value);
        } else {
          batch.Delete(cf(m.table), m.key);
        }
      }
      return ToStatus(db_->Write(options, &batch), "catalog write");
    }
    std::unique_ptr<rocksdb::Transaction> txn(db_->BeginTransaction(options));
    for (const auto& c : write.conditions) {
      std::string value;
      rocksdb::Status s = txn->GetForUpdate(rocksdb::ReadOptions(), cf(c.table), c.key, &value);
      if (!s.ok() && !s.IsNotFound()) return ToStatus(s, "catalog read for a commit");
      const bool holds = s.IsNotFound() ? !c.value.has_value() : (c.value.has_value() && *c.value == value);
      if (!holds) {
        return absl::AbortedError(
            absl::StrCat(CatalogTableName(c.table), " record ", c.key, " changed before the commit"));
      }
    }
    for (const auto& m : write.mutations) {
      rocksdb::Status s = m.value ? txn->Put(cf(m.table), m.key, *m.value) : txn->Delete(cf(m.table), m.key);
      if (!s.ok()) return ToStatus(s, "catalog commit");
    }
    rocksdb::Status s = txn->Commit();
    if (s.IsBusy() || s.IsTryAgain()) {
      return absl::AbortedError("a record the commit depends on changed meanwhile: " + s.ToString());
    }
    return ToStatus(s, "catalog commit");
  }

 private:
  rocksdb::ColumnFamilyHandle* cf(CatalogTable table) const { return handles_[FamilyOf(table)]; }

  rocksdb::OptimisticTransactionDB* db_;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
};

}  // namespace

std::unique_ptr<Catalog> NewCatalog(rocksdb::OptimisticTransactionDB* db,
                                    const std::vector<rocksdb::ColumnFamilyHandle*>& handles) {
  return std::make_unique<RocksCatalog>(db, handles);
}

}  // namespace fleetprof::rocks
