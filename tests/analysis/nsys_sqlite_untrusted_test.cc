// An uploaded SQLite file is someone else's: the Nsight Systems reader refuses hostile and
// broken databases with one clear line, fast, and never runs what they carry
// (analysis/untrusted_sqlite.h, docs/analysis.md Nsight Systems).

#include <chrono>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "analysis/trace_analyzer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/analysis/analysis_test_util.h"
#include "tests/analysis/nsys_export_builder.h"
#include "tests/test_support.h"

namespace fleetprof::analysis {
namespace {

using ::testing::HasSubstr;
using testing::AnalyzeSqlite;
using testing::NsysExport;
using testing::SqliteBuilder;

constexpr auto kFast = std::chrono::seconds(10);

// Refused with one line that names the file and contains `expected`, within kFast.
void ExpectRefused(const std::string& bytes, const std::string& expected, const TraceLimits& limits = TraceLimits()) {
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<TraceSummary> s = AnalyzeSqlite(bytes, limits);
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(s.ok()) << "accepted; expected: " << expected;
  const std::string message(s.status().message());
  EXPECT_THAT(message, HasSubstr(expected));
  EXPECT_TRUE(message.starts_with("test.sqlite: ")) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_LT(took, kFast) << message;
}

// Rows enough that the export spans dozens of 1 KiB pages: tables, indexes and overflow chains.
std::string PagedExport() {
  SqliteBuilder builder;
  builder.Exec("PRAGMA page_size = 1024;");
  builder.Exec(testing::kNsysTables);
  builder.Exec(R"sql(
    CREATE INDEX kernel_start ON CUPTI_ACTIVITY_KIND_KERNEL(start);
    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300)
      INSERT INTO StringIds SELECT i, printf('kernel_%d_%.*c', i, i % 7 * 300, 'x') FROM n;
    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
      INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL SELECT i * 10, i * 10 + 5, 0, 1, 7, i, 16777216, i % 300 + 1, 1 FROM n;)sql");
  return builder.Bytes();
}

TEST(NsysSqliteUntrusted, PagedExportReadsWhole) {
  absl::StatusOr<TraceSummary> s = AnalyzeSqlite(PagedExport());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->devices.at(0).events, 2000);
}

TEST(NsysSqliteUntrusted, RefusesAViewPosingAsTheKernelTable) {
  SqliteBuilder builder;
  builder.Exec(R"sql(
    CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
    INSERT INTO StringIds VALUES (1, 'k');
    CREATE VIEW CUPTI_ACTIVITY_KIND_KERNEL AS
      WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c)
      SELECT x AS start, x + 1 AS end, 0 AS deviceId, 1 AS streamId, x AS correlationId, 0 AS globalPid,
             1 AS demangledName FROM c;)sql");
  ExpectRefused(builder.Bytes(), "view named like or on the Nsight Systems table CUPTI_ACTIVITY_KIND_KERNEL");
}

TEST(NsysSqliteUntrusted, RefusesTriggersNamedLikeOrOnATable) {
  SqliteBuilder named;
  named.Exec(testing::kNsysTables);
  named.Exec("CREATE TABLE t (x); CREATE TRIGGER nvtx_events AFTER INSERT ON t BEGIN SELECT 1; END;");
  ExpectRefused(named.Bytes(), "trigger named like or on the Nsight Systems table NVTX_EVENTS");
  SqliteBuilder on;
  on.Exec(testing::kNsysTables);
  on.Exec("CREATE TRIGGER t AFTER INSERT ON StringIds BEGIN SELECT 1; END;");
  ExpectRefused(on.Bytes(), "trigger named like or on the Nsight Systems table StringIds");
}

TEST(NsysSqliteUntrusted, RefusesVirtualTablesAndGeneratedColumns) {
  SqliteBuilder fts;
  fts.Exec("CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);"
           "CREATE VIRTUAL TABLE NVTX_EVENTS USING fts5(text);");
  ExpectRefused(fts.Bytes(), "NVTX_EVENTS is not an ordinary table");
  SqliteBuilder generated;
  generated.Exec("CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);"
                 "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER, end INTEGER AS (start + 1), deviceId INTEGER);");
  ExpectRefused(generated.Bytes(), "column end of CUPTI_ACTIVITY_KIND_MEMSET is generated or hidden");
}

TEST(NsysSqliteUntrusted, RefusesTruncatedFiles) {
  const std::string bytes = PagedExport();
  ASSERT_GT(bytes.size(), 20'000u);
  for (size_t size : {size_t{16}, size_t{99}, size_t{100}, size_t{1024}, size_t{3000}, bytes.size() / 2,
                      bytes.size() - 1024, bytes.size() - 1}) {
    SCOPED_TRACE(size);
    absl::StatusOr<TraceSummary> s = AnalyzeSqlite(bytes.substr(0, size));
    ASSERT_FALSE(s.ok());
    EXPECT_THAT(std::string(s.status().message()), ::testing::AnyOf(HasSubstr("truncated"), HasSubstr("corrupt")));
  }
}

// The header's page count bounds the copy: a file that goes on, or declares more than the
// limit, is refused before its bytes are held (a gzip bomb behind a SQLite header).
TEST(NsysSqliteUntrusted, RefusesBytesPastOrBeyondWhatTheHeaderDeclares) {
  const std::string bytes = PagedExport();
  ExpectRefused(bytes + std::string(4096, '\0'), "goes on past the " + std::to_string(bytes.size()) + " bytes");
  std::string huge = bytes;
  huge[28] = '\x01';  // 2^24 pages of 1 KiB: 16 GiB
  huge[29] = huge[30] = huge[31] = '\0';
  TraceLimits limits;
  limits.max_trace_mb = 64;
  ExpectRefused(huge + std::string(size_t{80} << 20, '\0'), "header declares 17179869184 bytes, more than --max_trace_mb",
                limits);
}

// Every page in turn overwritten with noise: quick_check (or the header test) refuses each.
TEST(NsysSqliteUntrusted, RefusesACorruptPageAnywhere) {
  const std::string bytes = PagedExport();
  const size_t pages = bytes.size() / 1024;
  ASSERT_GT(pages, 30u);
  std::mt19937 noise(41);
  for (size_t page = 0; page < pages; ++page) {
    SCOPED_TRACE(absl::StrCat("page ", page + 1, " of ", pages));
    std::string corrupt = bytes;
    for (size_t i = page * 1024; i < (page + 1) * 1024; ++i) corrupt[i] = static_cast<char>(noise());
    absl::StatusOr<TraceSummary> s = AnalyzeSqlite(corrupt);
    ASSERT_FALSE(s.ok());
    const std::string message(s.status().message());
    EXPECT_THAT(message, ::testing::AnyOf(HasSubstr("corrupt"), HasSubstr("not a SQLite database")));
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

TEST(NsysSqliteUntrusted, RefusesCorruptPagesOfARealExport) {
  const std::string path = fleetprof::testing::CorpusPath("nsys/saxpy_a100.sqlite.gz");
  FLEETPROF_REQUIRE_PATH(path);
  const std::string bytes = testing::ReadDecompressed(path);
  const size_t page_size = 4096;
  std::mt19937 noise(7);
  for (size_t page = 1; page < bytes.size() / page_size; page += 13) {
    SCOPED_TRACE(absl::StrCat("page ", page + 1));
    std::string corrupt = bytes;
    for (size_t i = page * page_size; i < (page + 1) * page_size; ++i) corrupt[i] = static_cast<char>(noise());
    absl::StatusOr<TraceSummary> s = AnalyzeSqlite(corrupt);
    ASSERT_FALSE(s.ok());
    EXPECT_THAT(std::string(s.status().message()), HasSubstr("corrupt"));
  }
}

TEST(NsysSqliteUntrusted, RefusesADatabaseWithoutStringIds) {
  SqliteBuilder builder;
  builder.Exec("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER); INSERT INTO "
               "CUPTI_ACTIVITY_KIND_KERNEL VALUES (1, 2);");
  ExpectRefused(builder.Bytes(), "not an Nsight Systems export: the SQLite database has no StringIds table");
}

TEST(NsysSqliteUntrusted, RefusesBytesThatAreNotSqlite) {
  ExpectRefused("this is no database, only its name says so", "not a SQLite database");
  ExpectRefused(std::string("SQLite format 3\0", 16) + "short", "truncated SQLite database");
}

TEST(NsysSqliteUntrusted, RefusesA64MiBKernelName) {
  const std::string bytes = NsysExport(R"sql(
    INSERT INTO StringIds VALUES (1, printf('%.*c', 67108864, 'x'));
    INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (0, 10, 0, 1, 1, NULL, NULL, 1, 1);)sql");
  ExpectRefused(bytes, "a value is longer than 16 MiB");
}

TEST(NsysSqliteUntrusted, RefusesA64MiBNvtxText) {
  const std::string bytes = NsysExport(R"sql(
    INSERT INTO NVTX_EVENTS VALUES (0, 10, 59, printf('%.*c', 67108864, 'x'), 1, NULL, 0);)sql");
  ExpectRefused(bytes, "reading NVTX_EVENTS: a value is longer than 16 MiB");
}

TEST(NsysSqliteUntrusted, RefusesMoreRowsThanTheEventLimit) {
  const std::string bytes = NsysExport(R"sql(
    INSERT INTO StringIds VALUES (1, 'k');
    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1001)
      INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL SELECT i, i + 1, 0, 1, 1, i, 0, 1, 1 FROM n;)sql");
  TraceLimits limits;
  limits.max_trace_events = 1000;
  ExpectRefused(bytes, "more than 1000 events (at row 1001 of CUPTI_ACTIVITY_KIND_KERNEL); raise --max_trace_events",
                limits);
  limits.max_trace_events = 1001;
  EXPECT_TRUE(AnalyzeSqlite(bytes, limits).ok());
}

TEST(NsysSqliteUntrusted, RefusesMoreRowsThanTheDefaultEventLimit) {
  const TraceLimits defaults;
  const std::string bytes = NsysExport(absl::StrCat(R"sql(
    INSERT INTO StringIds VALUES (1, 'k');
    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < )sql",
                                                    defaults.max_trace_events + 1, R"sql()
      INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET SELECT i, i, 0, 1, NULL, NULL, 0, 0 FROM n;)sql"));
  ExpectRefused(bytes, absl::StrCat("more than ", defaults.max_trace_events, " events"));
}

TEST(NsysSqliteUntrusted, RefusesTimesOutsideTheTickBound) {
  ExpectRefused(NsysExport(R"sql(
    INSERT INTO StringIds VALUES (1, 'k');
    INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (9223372036854775000, 9223372036854775001, 0, 1, 1, NULL, NULL, 1, 1);)sql"),
                "the event at row 1 of CUPTI_ACTIVITY_KIND_KERNEL (start 9223372036854775000 ns");
}

// StringIds without its primary key makes every name lookup a scan: the step budget stops it.
TEST(NsysSqliteUntrusted, BoundsSqliteWorkByTheEventLimit) {
  SqliteBuilder builder;
  builder.Exec(R"sql(
    CREATE TABLE StringIds (id INTEGER, value TEXT);
    CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, demangledName INTEGER);
    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
      INSERT INTO StringIds SELECT i, 'kernel_' || i FROM n;
    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
      INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL SELECT i, i + 1, 0, 20001 - i FROM n;)sql");
  TraceLimits limits;
  limits.max_trace_events = 100'000;
  ExpectRefused(builder.Bytes(), "reading StringIds: refused after", limits);
}

}  // namespace
}  // namespace fleetprof::analysis
