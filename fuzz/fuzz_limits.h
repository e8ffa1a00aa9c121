#pragma once
// Trace limits for the fuzzers: small enough that no input spends seconds or gigabytes inside
// a limit a real server would also apply, so libFuzzer's time and memory budgets find bugs,
// not large-but-legal inputs.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "analysis/byte_source.h"
#include "analysis/trace_analyzer.h"
#include "analysis/trace_limits.h"

namespace fleetprof::fuzz {

inline analysis::TraceLimits FuzzTraceLimits() {
  analysis::TraceLimits limits;
  limits.max_trace_mb = 64;
  limits.max_trace_events = 200'000;
  limits.max_trace_names = 50'000;
  limits.max_trace_name_mb = 16;
  limits.max_trace_stats = 200'000;
  return limits;
}

// The read size of the input's source: each input also picks where the reader's refills
// fall, from its first byte.
inline size_t ChunkFor(const uint8_t* data, size_t size) {
  return size == 0 ? 1 : 1 + (static_cast<size_t>(data[0]) * 97) % 8192;
}

// One input through the whole analysis of `format`, as an upload would go.
inline void AnalyzeFuzzInput(const uint8_t* data, size_t size, const char* name, analysis::TraceFormat format) {
  std::unique_ptr<analysis::ByteSource> source = analysis::OpenStringSource(
      name, std::string(reinterpret_cast<const char*>(data), size), ChunkFor(data, size));
  (void)analysis::AnalyzeTrace(*source, format, nullptr, FuzzTraceLimits());
}

}  // namespace fleetprof::fuzz
