// The streaming XSpace (protobuf) reader, the XLA op view, allocator memory and breakdowns.
#include "fuzz/fuzz_limits.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fleetprof::fuzz::AnalyzeFuzzInput(data, size, "fuzz.xplane.pb", fleetprof::analysis::TraceFormat::kXSpace);
  return 0;
}
