// The Kineto (Chrome-trace) JSON reader and every breakdown over what it read.
#include "fuzz/fuzz_limits.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fleetprof::fuzz::AnalyzeFuzzInput(data, size, "fuzz.json", fleetprof::analysis::TraceFormat::kKinetoJson);
  return 0;
}
