// The Kineto (Chrome-trace) JSON reader and every breakdown over what it read.
#include <cstdint>
#include <string>

#include "analysis/byte_source.h"
#include "analysis/trace_analyzer.h"
#include "fuzz/fuzz_limits.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fleetprof;
  std::unique_ptr<analysis::ByteSource> source = analysis::OpenStringSource(
      "fuzz.json", std::string(reinterpret_cast<const char*>(data), size), fuzz::ChunkFor(data, size));
  (void)analysis::AnalyzeTrace(*source, analysis::TraceFormat::kKinetoJson, nullptr, fuzz::FuzzTraceLimits());
  return 0;
}
