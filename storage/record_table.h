#pragma once
// RecordTable<Message>: one catalog table of protobuf records, keyed by a string. The get, put,
// delete and list code every table (profiles, uploads, agents, captures, schedules) needs, once.

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "storage/catalog.h"

namespace fleetprof {

// Records that do not parse (a bug or a damaged disk): counted and logged, never skipped in
// silence; the record stays where it is.
class UnreadableLog {
 public:
  void Report(std::string_view kind, std::string_view key);
  int64_t count() const { return count_.load(); }

 private:
  std::atomic<int64_t> count_{0};
};

template <typename Message>
class RecordTable {
 public:
  // `kind` names a record in errors ("profile", "capture"). Neither pointer is owned.
  RecordTable(Catalog* catalog, CatalogTable table, const char* kind, UnreadableLog* unreadable)
      : catalog_(catalog), table_(table), kind_(kind), unreadable_(unreadable) {}

  CatalogTable table() const { return table_; }

  // nullopt when absent; DATA_LOSS when the stored record does not parse.
  absl::StatusOr<std::optional<Message>> Find(std::string_view key) const {
    auto value = catalog_->Get(table_, key);
    if (!value.ok()) return value.status();
    if (!value->has_value()) return std::optional<Message>();
    Message message;
    if (!message.ParseFromString(**value)) {
      return absl::DataLossError(absl::StrCat(kind_, " ", std::string(key), ": stored record does not parse"));
    }
    return std::optional<Message>(std::move(message));
  }

  // NOT_FOUND when absent.
  absl::StatusOr<Message> Get(std::string_view key) const {
    auto found = Find(key);
    if (!found.ok()) return found.status();
    if (!found->has_value()) return absl::NotFoundError(absl::StrCat(kind_, " ", std::string(key), ": not found"));
    return **std::move(found);
  }

  absl::Status Put(std::string_view key, const Message& message, bool sync = false) {
    CatalogWrite write;
    Put(write, key, message);
    write.sync = sync;
    return catalog_->Commit(write);
  }
  // Adds the put to a larger write.
  void Put(CatalogWrite& write, std::string_view key, const Message& message) const {
    write.Put(table_, std::string(key), message.SerializeAsString());
  }

  absl::Status Delete(std::string_view key, bool sync = false) {
    CatalogWrite write;
    write.Delete(table_, std::string(key));
    write.sync = sync;
    return catalog_->Commit(write);
  }

  // Records whose keys start with `prefix`, in key order or reversed; one that does not parse is
  // reported and skipped. `visit` returns false to stop.
  absl::Status ForEach(const CatalogScan& scan, const std::function<bool(std::string_view key, Message&)>& visit) {
    return catalog_->Scan(table_, scan, [&](std::string_view key, std::string_view value) {
      Message message;
      if (!message.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
        unreadable_->Report(kind_, key);
        return true;
      }
      return visit(key, message);
    });
  }

  // Every readable record, in key order.
  absl::StatusOr<std::vector<Message>> List() {
    std::vector<Message> all;
    absl::Status s = ForEach(CatalogScan(), [&](std::string_view, Message& message) {
      all.push_back(std::move(message));
      return true;
    });
    if (!s.ok()) return s;
    return all;
  }

 private:
  Catalog* catalog_;
  CatalogTable table_;
  const char* kind_;
  UnreadableLog* unreadable_;
};

}  // namespace fleetprof
