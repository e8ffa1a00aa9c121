#pragma once
// A SQLite database someone else wrote (an uploaded Nsight Systems export), opened so that
// reading it can neither run what the file carries nor take unbounded time or memory
// (docs/analysis.md, Nsight Systems):
//  - the bytes are copied into memory (the caller bounds them) and opened read-only with
//    sqlite3_deserialize: no file, no journal, no other database is touched;
//  - defensive mode on, trusted_schema off, views, triggers and extension loading off,
//    double-quoted strings are identifiers only, and SQLite's limits are small (a text or blob
//    value over 16 MiB fails the read);
//  - `PRAGMA quick_check` must answer `ok` before anything is read;
//  - every statement runs under one budget of SQLite virtual-machine steps for the whole
//    database (a progress handler), so no query runs without bound.
// Errors name the source and say what is wrong, on one line.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "analysis/byte_source.h"

struct sqlite3;
struct sqlite3_stmt;

namespace fleetprof::analysis {

// The longest text or blob value the database may hold (SQLITE_LIMIT_LENGTH).
inline constexpr int kMaxSqliteValueBytes = 16 << 20;

class UntrustedSqlite;

// One prepared statement of an UntrustedSqlite. Column accessors read the current row.
class SqliteStatement {
 public:
  SqliteStatement(SqliteStatement&& other) noexcept;
  SqliteStatement& operator=(SqliteStatement&&) = delete;
  ~SqliteStatement();

  // Binds an integer to parameter `index` (1-based) and resets the statement.
  absl::Status BindInt(int index, int64_t value);
  // Advances to the next row: true when there is one, false at the end.
  absl::StatusOr<bool> Step();

  bool IsNull(int col) const;
  // The value when the column holds an integer (SQLite's storage class INTEGER).
  std::optional<int64_t> Int(int col) const;
  // The value when the column holds text; valid until the next Step or reset.
  std::optional<std::string_view> Text(int col) const;

 private:
  friend class UntrustedSqlite;
  SqliteStatement(UntrustedSqlite* db, sqlite3_stmt* stmt, std::string what)
      : db_(db), stmt_(stmt), what_(std::move(what)) {}

  UntrustedSqlite* db_;
  sqlite3_stmt* stmt_;
  std::string what_;  // for errors: "reading CUPTI_ACTIVITY_KIND_KERNEL"
};

class UntrustedSqlite {
 public:
  // Reads `source` to its end into memory (refusing more than `max_bytes`) and opens it as
  // above. `max_steps` bounds the virtual-machine steps of every statement together.
  // Errors: not a SQLite file (by its 16-byte header), a truncated or corrupt one (what
  // quick_check or SQLite says), the byte cap.
  static absl::StatusOr<std::unique_ptr<UntrustedSqlite>> Open(ByteSource& source, uint64_t max_bytes,
                                                               int64_t max_steps);
  UntrustedSqlite(const UntrustedSqlite&) = delete;
  UntrustedSqlite& operator=(const UntrustedSqlite&) = delete;
  ~UntrustedSqlite();

  const std::string& name() const { return name_; }

  // Whether an ordinary table named `table` exists (any letter case). An object of another
  // type by that name (a view, trigger or index), a virtual table and a table with generated
  // or hidden columns are errors: the file is refused rather than half read.
  absl::StatusOr<bool> HasTable(std::string_view table);
  // The names of `table`'s columns. REQUIRES: HasTable(table).
  absl::StatusOr<std::vector<std::string>> Columns(std::string_view table);

  // Prepares `sql`; `what` names it in errors ("reading NVTX_EVENTS").
  absl::StatusOr<SqliteStatement> Prepare(const std::string& sql, std::string what);

  // The error of SQLite result `rc` while `what`: "FILE: what: SQLite's message".
  absl::Status Error(std::string_view what, int rc) const;

 private:
  UntrustedSqlite(std::string name, int64_t max_steps) : name_(std::move(name)), max_steps_(max_steps) {}
  absl::Status Configure();
  absl::Status QuickCheck();
  static int OnProgress(void* self);

  std::string name_;
  int64_t max_steps_;
  int64_t steps_ = 0;
  bool out_of_steps_ = false;
  unsigned char* image_ = nullptr;  // the file's bytes, sqlite3_malloc64'd; outlives db_
  sqlite3* db_ = nullptr;
};

}  // namespace fleetprof::analysis
