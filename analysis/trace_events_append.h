#pragma once
// Joins the events of a trace read in two parts at once (kineto_json_reader.cc reads the far
// part of a large file on a second thread): the result equals what one reader reading both
// parts in order would have built, names and their ids included.

#include "analysis/trace_events.h"

namespace fleetprof::analysis {

// True when `head` and `tail` together are surely within head's limits (counting every name
// of each as distinct), so no event of the whole could have broken one. When false, the
// caller reads on alone and meets the limit where a single reader meets it.
bool FitWithinLimitsTogether(const TraceEvents& head, const TraceEvents& tail);

// Appends `tail`'s events, counts and copy/message sizes to `head`. Names are interned into
// head's table in the order of tail's ids, the order a single reader would have met them, so
// every id equals the one it would have had. Metadata of `tail` overrides head's, as a later
// key does. `tail` is left empty.
void AppendEvents(TraceEvents* head, TraceEvents&& tail);

}  // namespace fleetprof::analysis
