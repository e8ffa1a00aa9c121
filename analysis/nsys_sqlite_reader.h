#pragma once
// Reader of Nsight Systems SQLite exports (`nsys export --type sqlite`, the file `nsys stats`
// writes), by the rules of docs/analysis.md (Nsight Systems):
//  - device activity: the rows of CUPTI_ACTIVITY_KIND_KERNEL, _MEMCPY and _MEMSET;
//  - host events, per thread (globalTid): CUDA runtime and driver calls (rows of
//    CUPTI_ACTIVITY_KIND_RUNTIME with eventClass 0 or 1, the runtime events, joined to the device
//    rows of their process by correlationId) and closed NVTX push/pop ranges (category
//    user_annotation, so they are scopes; the NVTX ranges first, then the calls, each table in
//    rowid order, so equal (start, duration) nest range-over-call);
//  - metadata: `nsys_version` and `schema_version` of the export, `device.<id>.name` and
//    `device.<id>.total_global_mem` from TARGET_INFO_GPU.
// A table that is absent has no rows. Every row of the tables read counts in `events`.
//
// The file is untrusted (analysis/untrusted_sqlite.h says how it is opened): it is copied into
// memory (bounded by --max_trace_mb before the call) and refused, with one line naming the
// file and what is wrong, when it is not SQLite, fails quick_check, has no StringIds table (not
// an nsys export), has a view, trigger or index named like a table read here, a virtual table
// or a generated column there, a value over 16 MiB, a row past --max_trace_events, a time
// outside ±kMaxAbsTicks, or needs more SQLite work than its rows can.
//
// Malformed rows are skipped and counted in TraceEvents::skipped_events, as the JSON reader
// does: a start or end that is not an integer, an end before the start, a kernel or call whose
// name id has no string, device activity whose deviceId is not an integer. Names keep their
// bytes (the summary replaces invalid UTF-8) and are cut to --max_name_bytes.

#include "absl/status/status.h"
#include "analysis/byte_source.h"
#include "analysis/trace_events.h"

namespace fleetprof::analysis {

// Reads `source` to its end into `out` (format, events, metadata).
absl::Status ReadNsysSqlite(ByteSource& source, TraceEvents* out);

// Whether `first_bytes` start a SQLite database ("SQLite format 3\0").
bool LooksLikeSqlite(std::string_view first_bytes);

}  // namespace fleetprof::analysis
