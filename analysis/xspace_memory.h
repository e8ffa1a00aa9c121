#pragma once
// Allocator memory of an XSpace, from its `/host:CPU` plane: TF's and XLA's BFC allocators
// log every allocation and free as an instant TraceMe named `MemoryAllocation` /
// `MemoryDeallocation`, with stats `bytes_allocated` (bytes in use after the event),
// `peak_bytes_in_use` (the allocator's high-water mark), `allocator_name` and, from some
// writers, `memory_id`. Each such event with bytes_allocated is one sample of "bytes in use"
// of its memory device: the memory_id stat's value, else allocator_name's, else "host".
//
// Memory: event names and stat names are both unknown while a plane's lines stream (an
// XPlane writes its metadata after its lines), and keeping every host event would cost as
// much as the plane. Allocator events are instants while nearly every other host event has
// a duration, so the collector keeps candidates only — zero-duration events with an integer
// stat — as (metadata id, time, varint-packed integer and text stats), about 6 bytes a stat.
// When the plane ends, candidates named as above become 32-byte samples, the rest go.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "analysis/name_table.h"
#include "analysis/trace_events.h"
#include "analysis/xspace_stats.h"

namespace fleetprof::analysis {

class XSpaceMemoryCollector {
 public:
  // From the plane's event_metadata: remembers which ids are allocator events.
  void NoteEventName(int64_t metadata_id, std::string_view name);

  void BeginLine() { line_first_ = candidates_.size(); }
  // A zero-duration event (offset relative to its line) of a plane that may be /host:CPU.
  // Keeps it only when it has an integer stat; string stats are interned in `plane`.
  // Returns how many stats it kept (for the trace limit --max_trace_stats).
  size_t AddCandidate(int64_t metadata_id, int64_t offset_ps, const StatScratch& stats,
                    PlaneStats* plane);
  // The line's timestamp, which may come after its events.
  void EndLine(int64_t timestamp_ns);

  // Turns the plane's allocator events into samples (when it is the host plane) and
  // forgets its candidates. Devices are interned in `names`.
  void FinishPlane(bool host_plane, const PlaneStats& plane, NameTable* names);

  // Appends the samples to out->memory as totals, in ticks relative to out->base_ns; sets
  // the base from the first sample when *base_set is false (a trace without activity).
  // Samples whose time does not fit int64 ticks are counted in skipped_events.
  void Finish(TraceEvents* out, bool* base_set);

 private:
  struct Candidate {
    int64_t metadata_id = 0;
    int64_t line_ts_ns = 0;
    int64_t offset_ps = 0;
    size_t stats_begin = 0;  // into arena_; ends where the next candidate's begin
  };
  struct Sample {
    int64_t line_ts_ns = 0;
    int64_t offset_ps = 0;
    int64_t bytes = 0;
    NameId device = 0;
  };

  absl::flat_hash_set<int64_t> memory_ids_;
  std::vector<Candidate> candidates_;
  std::string arena_;  // packed stats of the candidates
  size_t line_first_ = 0;
  std::vector<RawStat> decoded_;  // scratch
  std::vector<Sample> samples_;
  std::map<std::string, int64_t> peaks_;
};

}  // namespace fleetprof::analysis
