#pragma once
// Turns the events of one trace (analysis::TraceEvents, whatever format it came from) into
// the profile's event store: one track per device stream, host thread and memory counter;
// inside a track one level per duration magnitude (levels.h); inside a level blocks of at
// most kBlockEvents events sorted by start. Memory on top of the events themselves: a
// 4-byte index per event, plus 5 bytes per event of the track being written, and one block.

#include <cstddef>

#include "absl/status/status.h"
#include "analysis/trace_analyzer.h"
#include "analysis/trace_events.h"
#include "timeline/timeline_store.h"

namespace fleetprof::timeline {

inline constexpr size_t kBlockEvents = 256;

// Writes every block and name chunk, then the directory.
absl::Status WriteTimeline(const analysis::TraceEvents& events, TimelineWriter& writer);

// The analysis seam: hands each analysed trace's events to WriteTimeline.
class TimelineSink : public analysis::TraceEventsSink {
 public:
  explicit TimelineSink(TimelineWriter* writer) : writer_(writer) {}
  absl::Status Consume(const analysis::TraceEvents& events) override { return WriteTimeline(events, *writer_); }

 private:
  TimelineWriter* writer_;
};

}  // namespace fleetprof::timeline
