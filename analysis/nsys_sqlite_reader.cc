#include "analysis/nsys_sqlite_reader.h"

#include <memory>

#include "analysis/nsys_table_reader.h"
#include "analysis/untrusted_sqlite.h"

namespace fleetprof::analysis {
namespace {

// SQLite work allowed per event the limits allow, plus a floor for the schema and metadata:
// reading a row takes a few dozen virtual-machine steps, so a real export stays far below.
constexpr int64_t kSqliteStepsPerEvent = 100;
constexpr int64_t kSqliteStepsFloor = 20'000'000;

}  // namespace

bool LooksLikeSqlite(std::string_view first_bytes) {
  return first_bytes.starts_with(std::string_view("SQLite format 3\0", 16));
}

absl::Status ReadNsysSqlite(ByteSource& source, TraceEvents* out) {
  out->format = TraceFormat::kNsysSqlite;
  out->ticks_per_ns = 1;  // integer ns in the report's own clock
  out->base_ns = 0;
  const uint64_t max_bytes = static_cast<uint64_t>(out->limits.max_trace_mb) << 20;
  const int64_t max_steps = kSqliteStepsFloor + kSqliteStepsPerEvent * out->limits.max_trace_events;
  absl::StatusOr<std::unique_ptr<UntrustedSqlite>> db = UntrustedSqlite::Open(source, max_bytes, max_steps);
  if (!db.ok()) return db.status();
  NsysTableReader reader(**db, out);
  return reader.Read();
}

}  // namespace fleetprof::analysis
