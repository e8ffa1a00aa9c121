#include "analysis/untrusted_sqlite.h"

#include <sqlite3.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace fleetprof::analysis {
namespace {

constexpr std::string_view kSqliteMagic("SQLite format 3\0", 16);
// How many virtual-machine steps pass between two calls of the progress handler.
constexpr int kStepsPerProgressCall = 1000;

// SQLite's messages, and quick_check's answers, on one line.
std::string OneLine(std::string_view text) {
  return absl::StrReplaceAll(std::string(text), {{"\r\n", "; "}, {"\n", "; "}, {"\r", "; "}});
}

// The file's bytes in one sqlite3_malloc64'd buffer. Growing by realloc lets a large buffer
// move without a copy (mremap), so the peak stays near the file's size.
struct Image {
  unsigned char* bytes = nullptr;
  uint64_t size = 0;
  uint64_t capacity = 0;
  ~Image() { sqlite3_free(bytes); }
  unsigned char* Release() { return std::exchange(bytes, nullptr); }
};

uint32_t BigEndian32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

// The size the header declares (page count x page size), when it is valid: the change
// counter at byte 24 equals "version-valid-for" at 92, as every writer since SQLite 3.7.0 leaves
// it. REQUIRES: 100 header bytes.
std::optional<uint64_t> DeclaredSize(const unsigned char* header) {
  uint32_t page_size = (uint32_t{header[16]} << 8) | header[17];
  if (page_size == 1) page_size = 65536;
  const uint32_t pages = BigEndian32(header + 28);
  if (page_size < 512 || (page_size & (page_size - 1)) != 0 || pages == 0 ||
      BigEndian32(header + 24) != BigEndian32(header + 92)) {
    return std::nullopt;
  }
  return uint64_t{pages} * page_size;
}

// Copies `source` into `image`. A header that declares its size bounds the copy: more bytes
// than declared are refused, and so is a declared size past `max_bytes`, before it is read.
absl::Status ReadImage(ByteSource& source, uint64_t max_bytes, Image* image) {
  bool header_read = false;
  std::optional<uint64_t> declared;
  for (;;) {
    if (!header_read && image->size >= 100) {
      header_read = true;
      declared = DeclaredSize(image->bytes);
      if (declared && *declared > max_bytes) {
        return absl::ResourceExhaustedError(absl::StrCat(source.name(), ": the SQLite database's header declares ",
                                                         *declared, " bytes, more than --max_trace_mb allows"));
      }
    }
    const uint64_t end = declared.value_or(std::numeric_limits<uint64_t>::max());
    if (image->size >= end) {
      char extra = 0;
      absl::StatusOr<size_t> more = image->size == end ? source.Read(&extra, 1) : absl::StatusOr<size_t>(1);
      if (!more.ok()) return more.status();
      if (*more == 0) return absl::OkStatus();
      return absl::InvalidArgumentError(absl::StrCat(source.name(), ": refused: the file goes on past the ", end,
                                                     " bytes its SQLite header declares"));
    }
    if (image->size == image->capacity) {
      const uint64_t doubled = image->capacity == 0 ? (uint64_t{1} << 20) : image->capacity * 2;
      const uint64_t grown = declared ? *declared : doubled;
      void* bigger = sqlite3_realloc64(image->bytes, grown);
      if (bigger == nullptr) {
        return absl::ResourceExhaustedError(
            absl::StrCat(source.name(), ": out of memory copying the SQLite database (", grown, " bytes)"));
      }
      image->bytes = static_cast<unsigned char*>(bigger);
      image->capacity = grown;
    }
    const uint64_t room = std::min(image->capacity, end) - image->size;
    absl::StatusOr<size_t> got = source.Read(reinterpret_cast<char*>(image->bytes) + image->size, room);
    if (!got.ok()) return got.status();
    if (*got == 0) return absl::OkStatus();
    image->size += *got;
    if (image->size > max_bytes) {
      return absl::ResourceExhaustedError(
          absl::StrCat(source.name(), ": the SQLite database is larger than ", max_bytes, " bytes"));
    }
  }
}

// SQLite reads a file cut inside its last page as if the rest were zeros: a cut that the
// header's page size and page count show is refused here. REQUIRES: size >= 100.
absl::Status CheckWholePages(const std::string& name, const unsigned char* header, uint64_t size) {
  uint32_t page_size = (uint32_t{header[16]} << 8) | header[17];
  if (page_size == 1) page_size = 65536;
  if (page_size < 512 || (page_size & (page_size - 1)) != 0) return absl::OkStatus();  // SQLite says what is wrong
  if (size % page_size != 0) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": truncated SQLite database (", size,
                                                   " bytes are not a whole number of its ", page_size, "-byte pages)"));
  }
  if (std::optional<uint64_t> declared = DeclaredSize(header); declared && *declared > size) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": truncated SQLite database (its header declares ",
                                                   *declared, " bytes, the file holds ", size, ")"));
  }
  return absl::OkStatus();
}

}  // namespace

SqliteStatement::SqliteStatement(SqliteStatement&& other) noexcept
    : db_(other.db_), stmt_(std::exchange(other.stmt_, nullptr)), what_(std::move(other.what_)) {}

SqliteStatement::~SqliteStatement() { sqlite3_finalize(stmt_); }

absl::Status SqliteStatement::BindInt(int index, int64_t value) {
  sqlite3_reset(stmt_);
  const int rc = sqlite3_bind_int64(stmt_, index, value);
  return rc == SQLITE_OK ? absl::OkStatus() : db_->Error(what_, rc);
}

absl::StatusOr<bool> SqliteStatement::Step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return db_->Error(what_, rc);
}

bool SqliteStatement::IsNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }

std::optional<int64_t> SqliteStatement::Int(int col) const {
  if (sqlite3_column_type(stmt_, col) != SQLITE_INTEGER) return std::nullopt;
  return sqlite3_column_int64(stmt_, col);
}

std::optional<std::string_view> SqliteStatement::Text(int col) const {
  if (sqlite3_column_type(stmt_, col) != SQLITE_TEXT) return std::nullopt;
  const unsigned char* text = sqlite3_column_text(stmt_, col);
  if (text == nullptr) return std::nullopt;  // out of memory converting it
  return std::string_view(reinterpret_cast<const char*>(text), static_cast<size_t>(sqlite3_column_bytes(stmt_, col)));
}

absl::StatusOr<std::unique_ptr<UntrustedSqlite>> UntrustedSqlite::Open(ByteSource& source, uint64_t max_bytes,
                                                                       int64_t max_steps) {
  Image image;
  if (absl::Status read = ReadImage(source, max_bytes, &image); !read.ok()) return read;
  if (image.size < kSqliteMagic.size() ||
      std::memcmp(image.bytes, kSqliteMagic.data(), kSqliteMagic.size()) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(source.name(), ": not a SQLite database (it does not start with \"SQLite format 3\")"));
  }
  if (image.size < 100) {
    return absl::InvalidArgumentError(
        absl::StrCat(source.name(), ": truncated SQLite database (", image.size, " bytes, shorter than its header)"));
  }
  if (absl::Status whole = CheckWholePages(source.name(), image.bytes, image.size); !whole.ok()) return whole;
  // Bytes 18 and 19 say WAL mode, which a database in memory cannot open; the file alone (no
  // -wal beside it) holds everything, as in rollback mode.
  if (image.bytes[18] == 2) image.bytes[18] = 1;
  if (image.bytes[19] == 2) image.bytes[19] = 1;

  std::unique_ptr<UntrustedSqlite> db(new UntrustedSqlite(source.name(), max_steps));
  const int open = sqlite3_open_v2(":memory:", &db->db_,
                                   SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (open != SQLITE_OK) return db->Error("opening SQLite", open);
  if (absl::Status configured = db->Configure(); !configured.ok()) return configured;
  const uint64_t size = image.size;
  db->image_ = image.Release();
  const int loaded = sqlite3_deserialize(db->db_, "main", db->image_, static_cast<sqlite3_int64>(size),
                                         static_cast<sqlite3_int64>(size), SQLITE_DESERIALIZE_READONLY);
  if (loaded != SQLITE_OK) return db->Error("opening the SQLite database", loaded);
  if (absl::Status checked = db->QuickCheck(); !checked.ok()) return checked;
  return db;
}

UntrustedSqlite::~UntrustedSqlite() {
  sqlite3_close_v2(db_);  // every statement is finalized by then: they do not outlive the reader
  sqlite3_free(image_);
}

absl::Status UntrustedSqlite::Configure() {
  struct Flag {
    int op;
    int value;
  };
  const Flag flags[] = {
      {SQLITE_DBCONFIG_DEFENSIVE, 1},         {SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0},
      {SQLITE_DBCONFIG_ENABLE_VIEW, 0},       {SQLITE_DBCONFIG_ENABLE_TRIGGER, 0},
      {SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0}, {SQLITE_DBCONFIG_ENABLE_FKEY, 0},
      {SQLITE_DBCONFIG_DQS_DML, 0},           {SQLITE_DBCONFIG_DQS_DDL, 0},
  };
  for (const Flag& flag : flags) {
    int now = -1;
    const int rc = sqlite3_db_config(db_, flag.op, flag.value, &now);
    if (rc != SQLITE_OK || now != flag.value) return Error("configuring SQLite", rc == SQLITE_OK ? SQLITE_ERROR : rc);
  }
  sqlite3_enable_load_extension(db_, 0);
  struct Limit {
    int id;
    int value;
  };
  const Limit limits[] = {
      {SQLITE_LIMIT_LENGTH, kMaxSqliteValueBytes},
      {SQLITE_LIMIT_SQL_LENGTH, 1 << 20},  // one statement of the schema
      {SQLITE_LIMIT_EXPR_DEPTH, 100},
      {SQLITE_LIMIT_COMPOUND_SELECT, 8},
      {SQLITE_LIMIT_FUNCTION_ARG, 8},
      {SQLITE_LIMIT_ATTACHED, 0},
      {SQLITE_LIMIT_LIKE_PATTERN_LENGTH, 256},
      {SQLITE_LIMIT_VARIABLE_NUMBER, 8},
      {SQLITE_LIMIT_TRIGGER_DEPTH, 1},
      {SQLITE_LIMIT_WORKER_THREADS, 0},
  };
  for (const Limit& limit : limits) sqlite3_limit(db_, limit.id, limit.value);
  sqlite3_progress_handler(db_, kStepsPerProgressCall, &UntrustedSqlite::OnProgress, this);
  char* message = nullptr;
  const int rc = sqlite3_exec(db_, "PRAGMA trusted_schema=OFF", nullptr, nullptr, &message);
  sqlite3_free(message);
  return rc == SQLITE_OK ? absl::OkStatus() : Error("configuring SQLite", rc);
}

int UntrustedSqlite::OnProgress(void* self) {
  auto* db = static_cast<UntrustedSqlite*>(self);
  db->steps_ += kStepsPerProgressCall;
  if (db->steps_ > db->max_steps_) db->out_of_steps_ = true;
  return db->out_of_steps_ ? 1 : 0;  // non-zero interrupts the statement
}

absl::Status UntrustedSqlite::QuickCheck() {
  absl::StatusOr<SqliteStatement> check = Prepare("PRAGMA main.quick_check(1)", "checking the database");
  if (!check.ok()) return check.status();
  absl::StatusOr<bool> row = check->Step();
  if (!row.ok()) return row.status();
  std::optional<std::string_view> answer = *row ? check->Text(0) : std::nullopt;
  if (answer == "ok") return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(name_, ": corrupt SQLite database: quick_check says \"",
                                                 OneLine(answer.value_or("nothing")), "\""));
}

absl::StatusOr<bool> UntrustedSqlite::HasTable(std::string_view table) {
  absl::StatusOr<SqliteStatement> objects =
      Prepare(absl::StrCat("SELECT type, substr(sql, 1, 40) FROM main.sqlite_schema WHERE name = '", std::string(table),
                           "' COLLATE NOCASE OR (type = 'trigger' AND tbl_name = '", std::string(table), "' COLLATE NOCASE)"),
              absl::StrCat("looking for table ", std::string(table)));
  if (!objects.ok()) return objects.status();
  bool found = false;
  for (;;) {
    absl::StatusOr<bool> row = objects->Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    const std::string type(objects->Text(0).value_or("?"));
    const std::string sql(objects->Text(1).value_or(""));
    if (type != "table") {
      return absl::InvalidArgumentError(absl::StrCat(name_, ": refused: the database has a ", type, " named like ",
                                                     "or on the Nsight Systems table ", std::string(table),
                                                     ", which an export never has"));
    }
    if (!absl::StartsWithIgnoreCase(sql, "CREATE TABLE")) {
      return absl::InvalidArgumentError(
          absl::StrCat(name_, ": refused: ", std::string(table), " is not an ordinary table (\"", OneLine(sql), "…\")"));
    }
    found = true;
  }
  if (!found) return false;
  absl::StatusOr<SqliteStatement> columns =
      Prepare(absl::StrCat("SELECT name FROM pragma_table_xinfo('", std::string(table), "', 'main') WHERE hidden <> 0"),
              absl::StrCat("reading the columns of ", std::string(table)));
  if (!columns.ok()) return columns.status();
  absl::StatusOr<bool> hidden = columns->Step();
  if (!hidden.ok()) return hidden.status();
  if (*hidden) {
    return absl::InvalidArgumentError(absl::StrCat(name_, ": refused: column ",
                                                   std::string(columns->Text(0).value_or("?")), " of ", std::string(table),
                                                   " is generated or hidden, which an export's never is"));
  }
  return true;
}

absl::StatusOr<std::vector<std::string>> UntrustedSqlite::Columns(std::string_view table) {
  absl::StatusOr<SqliteStatement> columns = Prepare(
      absl::StrCat("SELECT name FROM pragma_table_xinfo('", std::string(table), "', 'main')"), absl::StrCat("reading the columns of ", std::string(table)));
  if (!columns.ok()) return columns.status();
  std::vector<std::string> names;
  for (;;) {
    absl::StatusOr<bool> row = columns->Step();
    if (!row.ok()) return row.status();
    if (!*row) return names;
    names.emplace_back(columns->Text(0).value_or(""));
  }
}

absl::StatusOr<SqliteStatement> UntrustedSqlite::Prepare(const std::string& sql, std::string what) {
  sqlite3_stmt* stmt = nullptr;
  const int rc = sqlite3_prepare_v2(db_, sql.c_str(), static_cast<int>(sql.size()), &stmt, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt);
    return Error(what, rc);
  }
  return SqliteStatement(this, stmt, std::move(what));
}

absl::Status UntrustedSqlite::Error(std::string_view what, int rc) const {
  if (out_of_steps_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        name_, ": ", std::string(what), ": refused after ", max_steps_,
        " steps of SQLite work, more than its tables' rows need within --max_trace_events"));
  }
  const int primary = rc & 0xff;
  const std::string message = OneLine(db_ != nullptr ? sqlite3_errmsg(db_) : sqlite3_errstr(rc));
  if (primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB) {
    return absl::InvalidArgumentError(absl::StrCat(name_, ": corrupt or truncated SQLite database (", std::string(what), ": ",
                                                   message, ")"));
  }
  if (primary == SQLITE_TOOBIG) {
    return absl::InvalidArgumentError(absl::StrCat(name_, ": refused: ", std::string(what), ": a value is longer than ",
                                                   kMaxSqliteValueBytes >> 20, " MiB (", message, ")"));
  }
  if (primary == SQLITE_NOMEM) {
    return absl::ResourceExhaustedError(absl::StrCat(name_, ": ", std::string(what), ": out of memory (", message, ")"));
  }
  return absl::InvalidArgumentError(absl::StrCat(name_, ": ", std::string(what), ": ", message));
}

}  // namespace fleetprof::analysis
