#pragma once
// Small Nsight Systems SQLite exports for the reader's tests, built with SQLite's C API in
// memory: the tables and columns the reader reads, as nsys writes them, and the rows a test
// adds with SQL.

#include <sqlite3.h>

#include <string>

#include "absl/status/statusor.h"
#include "analysis/byte_source.h"
#include "analysis/trace_analyzer.h"
#include "gtest/gtest.h"

namespace fleetprof::analysis::testing {

// The tables of an export (a subset of their columns), as nsys 2024 declares them.
inline constexpr const char* kNsysTables = R"sql(
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER,
  globalPid INTEGER, demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  value INTEGER NOT NULL, bytes INTEGER NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL,
  eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL,
  returnValue INTEGER NOT NULL);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL,
  text TEXT, globalTid INTEGER, textId INTEGER, domainId INTEGER);
)sql";

// A globalTid / globalPid as nsys serializes them: process in bits 24.., thread below.
inline constexpr int64_t NsysTid(int64_t pid, int64_t tid) { return (pid << 24) | tid; }

class SqliteBuilder {
 public:
  SqliteBuilder() { EXPECT_EQ(sqlite3_open(":memory:", &db_), SQLITE_OK); }
  ~SqliteBuilder() { sqlite3_close(db_); }
  SqliteBuilder(const SqliteBuilder&) = delete;
  SqliteBuilder& operator=(const SqliteBuilder&) = delete;

  // Runs `sql` (any number of statements); a failure fails the test.
  void Exec(const std::string& sql) {
    char* error = nullptr;
    EXPECT_EQ(sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK)
        << (error != nullptr ? error : "") << "\n  in: " << sql.substr(0, 300);
    sqlite3_free(error);
  }
  // The database file's bytes.
  std::string Bytes() {
    sqlite3_int64 size = 0;
    unsigned char* bytes = sqlite3_serialize(db_, "main", &size, 0);
    EXPECT_NE(bytes, nullptr);
    std::string out(reinterpret_cast<const char*>(bytes), static_cast<size_t>(size));
    sqlite3_free(bytes);
    return out;
  }
  sqlite3* db() { return db_; }

 private:
  sqlite3* db_ = nullptr;
};

// An export with the tables above and `rows` (SQL inserts).
inline std::string NsysExport(const std::string& rows) {
  SqliteBuilder builder;
  builder.Exec(kNsysTables);
  builder.Exec(rows);
  return builder.Bytes();
}

// Analyses `bytes` as an upload would: gunzip, detection by content, then the reader.
inline absl::StatusOr<TraceSummary> AnalyzeSqlite(const std::string& bytes,
                                                  const TraceLimits& limits = TraceLimits(),
                                                  size_t chunk = SIZE_MAX) {
  return AnalyzeTraceStream(OpenStringSource("test.sqlite", bytes, chunk), TraceFormat::kUnknown, nullptr, limits);
}

}  // namespace fleetprof::analysis::testing
