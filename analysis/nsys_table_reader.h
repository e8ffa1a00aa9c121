#pragma once
// The inside of the Nsight Systems reader (analysis/nsys_sqlite_reader.h): one object reads the
// tables of one opened export into TraceEvents. nsys_table_reader.cc holds the plumbing
// (queries, rows, strings, metadata), nsys_event_rows.cc the rows that become events.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "analysis/trace_events.h"
#include "analysis/untrusted_sqlite.h"

namespace fleetprof::analysis {

// The tables the reader reads; an object of another type by one of these names refuses the file.
inline constexpr std::string_view kNsysStringTable = "StringIds";
inline constexpr std::string_view kNsysKernelTable = "CUPTI_ACTIVITY_KIND_KERNEL";
inline constexpr std::string_view kNsysMemcpyTable = "CUPTI_ACTIVITY_KIND_MEMCPY";
inline constexpr std::string_view kNsysMemsetTable = "CUPTI_ACTIVITY_KIND_MEMSET";
inline constexpr std::string_view kNsysRuntimeTable = "CUPTI_ACTIVITY_KIND_RUNTIME";
inline constexpr std::string_view kNsysNvtxTable = "NVTX_EVENTS";
inline constexpr std::string_view kNsysMemcpyKindTable = "ENUM_CUDA_MEMCPY_OPER";
inline constexpr std::string_view kNsysGpuTable = "TARGET_INFO_GPU";

// A column a query selects; an absent optional one reads as NULL.
struct NsysColumn {
  std::string_view name;
  bool required;
};

// Device rows launched by one process share correlation ids only within it: (process, id) as
// one int64 for the analysis' global join, packed when both fit, else numbered (negative).
class CorrelationKeys {
 public:
  int64_t Key(int64_t process, int64_t correlation);

 private:
  absl::flat_hash_map<std::pair<int64_t, int64_t>, int64_t> others_;
};

class NsysTableReader {
 public:
  NsysTableReader(UntrustedSqlite& db, TraceEvents* out) : db_(db), out_(out) {}
  absl::Status Read();

 private:
  using RowFn = absl::FunctionRef<absl::Status(const SqliteStatement& row, int64_t index)>;

  // --- nsys_table_reader.cc
  // SELECT of `columns` (NULL for an absent optional one) from `table` in rowid order, or
  // nullopt when the table is absent. An absent required column refuses the file.
  absl::StatusOr<std::optional<SqliteStatement>> Select(std::string_view table, std::span<const NsysColumn> columns,
                                                        std::string_view where = "");
  // Runs `fn` on each row of `table` (counted in `events` when `events` is set).
  absl::Status ForEachRow(std::string_view table, std::span<const NsysColumn> columns, bool events, RowFn fn,
                          std::string_view where = "");
  // The start (column 0) and end (column 1) of a row as start and duration: false for a row to
  // skip (counted), an error for a time outside ±kMaxAbsTicks.
  absl::StatusOr<bool> RowSpan(const SqliteStatement& row, std::string_view table, int64_t index, Ticks* start,
                               Ticks* dur);
  // The StringIds value of `id`, cut to --max_name_bytes; nullopt when there is none. Valid
  // until the next call.
  absl::StatusOr<std::optional<std::string_view>> String(int64_t id);
  NameId Intern(std::string_view name);  // cut to --max_name_bytes
  NameId InternInt(absl::flat_hash_map<int64_t, NameId>* cache, int64_t value);
  NameId Thread(std::optional<int64_t> global_tid);
  absl::Status ReadMetadata();
  absl::Status ReadGpus();
  absl::Status ReadMemcpyKinds();

  // --- nsys_event_rows.cc
  absl::Status ReadKernels();
  absl::Status ReadMemcpys();
  absl::Status ReadMemsets();
  // Adds device activity from a row whose columns 2..5 are deviceId, streamId, correlationId,
  // globalPid.
  void AddActivity(const SqliteStatement& row, Ticks start, Ticks dur, NameId name, NameId category,
                   ActivityKind kind);
  absl::Status ReadNvtxDomains();
  absl::Status ReadNvtxRanges();
  absl::Status ReadCudaCalls();
  // A range's name in full (nvtx_sum) and as ops[] counts it (an emit_nvtx name cut).
  struct NvtxNames {
    NameId full = 0;
    NameId op = 0;
  };
  absl::StatusOr<NvtxNames> NvtxName(const SqliteStatement& row);
  // Records a copy's or memset's bytes for the activity about to be added.
  void AddCopyBytes(std::optional<int64_t> bytes);

  UntrustedSqlite& db_;
  TraceEvents* out_;
  std::optional<SqliteStatement> string_lookup_;
  std::string scratch_;
  CorrelationKeys correlations_;
  absl::flat_hash_map<int64_t, NameId> devices_, streams_, threads_;
  absl::flat_hash_map<int64_t, NameId> kernel_names_, call_names_;
  absl::flat_hash_map<int64_t, ActivityKind> kernel_kinds_;  // by NameId
  bool has_memcpy_kinds_ = false;
  absl::flat_hash_map<int64_t, std::string> memcpy_kinds_;  // ENUM_CUDA_MEMCPY_OPER labels
  absl::flat_hash_map<int64_t, NameId> memcpy_names_;
  absl::flat_hash_map<int64_t, NameId> nvtx_domains_;
  absl::flat_hash_map<std::pair<int64_t, int64_t>, NvtxNames> nvtx_names_;  // (domainId, textId)
};

}  // namespace fleetprof::analysis
