#pragma once
// What one Chrome-trace event means for the analyses (docs/analysis.md, Chrome-trace JSON): the
// reader fills a KinetoRawEvent per event, and KinetoEventSink turns it into compact
// TraceEvents records (device activity, host event, memory sample) or counts it as skipped.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/trace_events.h"

namespace fleetprof::analysis {

// The fields read from one event object. The texts are views, valid until the reader reads
// on: into the read buffer (the fast lane, kineto_event_scan.h) or into `copies` (the general
// reader, whose buffer may move between the fields of an event). Copies are reused buffers:
// no allocation per event once warmed up.
struct KinetoRawEvent {
  enum class Number { kAbsent, kOk, kBad, kOutOfRange };

  std::string_view ph, cat, name, pid, tid;
  bool has_ph = false, has_cat = false, has_name = false, has_pid = false, has_tid = false;
  bool bad_type = false;  // ph/cat/name/pid/tid of the wrong JSON type
  Number ts = Number::kAbsent;
  Number dur = Number::kAbsent;
  int64_t ts_ns = 0;
  int64_t dur_ns = 0;
  std::string out_of_range;  // "ts 1e300": the text of a time kOutOfRange, for the error

  // args
  std::string_view device;  // string form of args.device
  bool has_device = false;
  int64_t correlation = 0;
  bool has_correlation = false;
  int64_t memory_device_id = 0;  // [memory] events: "Device Id"
  bool has_memory_device_id = false;
  int64_t total_allocated = 0;  // "Total Allocated"
  bool has_total_allocated = false;
  int64_t bytes = 0;  // "Bytes"
  bool has_bytes = false;
  int64_t copy_bytes = 0;  // "bytes" of a gpu_memcpy / gpu_memset
  bool has_copy_bytes = false;
  int64_t msg_nelems = 0;  // collective kernels: "In msg nelems"
  bool has_msg_nelems = false;
  std::string_view dtype;  // collective kernels: "dtype" (c10 ScalarType name: "Float", "BFloat16", …)
  bool has_dtype = false;

  struct Copies {
    std::string ph, cat, name, pid, tid, device, dtype;
  } copies;

  // Clears every field, views included (none may point into a buffer that moved).
  void Reset();
};

class KinetoEventSink {
 public:
  explicit KinetoEventSink(TraceEvents* out) : out_(out) {}

  // Classifies `event` and appends its record; malformed events count as skipped. False
  // (nothing added) when its time lies outside ±kMaxAbsTicks: the trace is to be rejected.
  bool Add(const KinetoRawEvent& event);

 private:
  bool AddComplete(const KinetoRawEvent& event);
  bool AddMemory(const KinetoRawEvent& event);

  // The text interned last through it, and its id. Runs of events share their category,
  // thread, device and stream (in a large trace three events in four repeat the previous
  // one's): comparing with the last text is cheaper than hashing it again.
  struct LastName {
    std::string_view text;  // the name table's copy, which never moves
    NameId id = 0;
    bool set = false;
  };
  NameId InternRepeated(std::string_view text, LastName* last);

  TraceEvents* out_;
  LastName device_, stream_, activity_category_, thread_, host_category_;
  std::string thread_key_;
  std::vector<int8_t> collective_by_name_;  // by NameId: -1 unknown, 0/1
  // The last "Device Id" of a [memory] event and its interned name.
  bool has_memory_device_ = false;
  int64_t memory_device_id_ = 0;
  NameId memory_device_ = 0;
};

// True when `name` contains nccl, rccl or hccl in any letter case.
bool IsCollectiveKernelName(std::string_view name);

// Bytes per element of a c10 ScalarType as Kineto writes it in "dtype" ("Float": 4); 0 unknown.
int64_t ScalarTypeBytes(std::string_view dtype);

// A host event of this Kineto category is a runtime call (docs/analysis.md, Host events):
// `Runtime`, or a category ending in `_runtime` or `_driver`.
bool IsRuntimeCategory(std::string_view cat);

}  // namespace fleetprof::analysis
