// The Nsight Systems SQLite reader on hostile databases: the untrusted opening (header, page
// checks, quick_check, schema checks, limits, the work bound) and the rows into TraceEvents.
#include "fuzz/fuzz_limits.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fleetprof::fuzz::AnalyzeFuzzInput(data, size, "fuzz.sqlite", fleetprof::analysis::TraceFormat::kNsysSqlite);
  return 0;
}
