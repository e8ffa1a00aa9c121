// The Kineto (Chrome-trace) JSON reader and every breakdown over what it read; and the reader's
// fast lane (analysis/kineto_event_scan.h) against the general reader: both must read every
// input to the same events and the same status, or the input is reported as a crash.
#include <cstdio>
#include <cstdlib>

#include "analysis/kineto_json_reader.h"
#include "fuzz/fuzz_limits.h"

namespace {

using fleetprof::analysis::TraceEvents;

struct Read {
  absl::Status status;
  TraceEvents events;
};

Read ReadKineto(const uint8_t* data, size_t size, bool scan) {
  fleetprof::analysis::SetKinetoEventScan(scan);
  Read read;
  read.events.limits = fleetprof::fuzz::FuzzTraceLimits();
  std::unique_ptr<fleetprof::analysis::ByteSource> source = fleetprof::analysis::OpenStringSource(
      "fuzz.json", std::string(reinterpret_cast<const char*>(data), size), fleetprof::fuzz::ChunkFor(data, size));
  read.status = fleetprof::analysis::ReadKinetoJson(*source, &read.events);
  fleetprof::analysis::SetKinetoEventScan(true);
  return read;
}

// The first field in which the two reads differ, or null.
const char* Difference(const Read& one, const Read& two) {
  if (one.status != two.status) return "status";
  if (!one.status.ok()) return nullptr;
  const TraceEvents& a = one.events;
  const TraceEvents& b = two.events;
  if (a.events != b.events || a.skipped_events != b.skipped_events ||
      a.unknown_category_events != b.unknown_category_events) {
    return "counts";
  }
  if (a.metadata != b.metadata) return "metadata";
  if (a.names.size() != b.names.size()) return "names";
  for (uint32_t i = 0; i < a.names.size(); ++i) {
    if (a.names.Get(i) != b.names.Get(i)) return "names";
  }
  if (a.activity.size() != b.activity.size()) return "activity";
  for (size_t i = 0; i < a.activity.size(); ++i) {
    const auto& x = a.activity[i];
    const auto& y = b.activity[i];
    if (x.start != y.start || x.dur != y.dur || x.correlation != y.correlation || x.name != y.name ||
        x.device != y.device || x.stream != y.stream || x.category != y.category || x.kind != y.kind ||
        x.has_correlation != y.has_correlation) {
      return "activity";
    }
  }
  if (a.host.size() != b.host.size()) return "host";
  for (size_t i = 0; i < a.host.size(); ++i) {
    const auto& x = a.host[i];
    const auto& y = b.host[i];
    if (x.start != y.start || x.dur != y.dur || x.correlation != y.correlation || x.name != y.name ||
        x.thread != y.thread || x.category != y.category || x.is_runtime != y.is_runtime ||
        x.has_correlation != y.has_correlation) {
      return "host";
    }
  }
  if (a.memory.size() != b.memory.size()) return "memory";
  for (size_t i = 0; i < a.memory.size(); ++i) {
    if (a.memory[i].ts != b.memory[i].ts || a.memory[i].bytes != b.memory[i].bytes ||
        a.memory[i].device != b.memory[i].device || a.memory[i].is_total != b.memory[i].is_total) {
      return "memory";
    }
  }
  if (a.copy_bytes != b.copy_bytes) return "copy_bytes";
  if (a.message_bytes != b.message_bytes) return "message_bytes";
  return nullptr;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fleetprof::fuzz::AnalyzeFuzzInput(data, size, "fuzz.json", fleetprof::analysis::TraceFormat::kKinetoJson);
  const Read general = ReadKineto(data, size, false);
  const Read scanned = ReadKineto(data, size, true);
  if (const char* field = Difference(general, scanned); field != nullptr) {
    std::fprintf(stderr, "the fast lane and the general reader differ in %s: %s / %s\n", field,
                 general.status.ToString().c_str(), scanned.status.ToString().c_str());
    std::abort();
  }
  return 0;
}
