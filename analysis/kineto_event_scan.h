#pragma once
// The fast lane of the Kineto JSON reader: one event object read straight from the tokenizer's
// buffer with a pointer, for the layout PyTorch and Kineto write (`{"ph": "X", "cat": …,
// "args": {…}}`, no escapes). The general reader (kineto_json_reader.cc) pays for
// its generality per token: a call, a whitespace peek and a state check for every key and
// value, which made up most of `fleetprof analyze`'s time (issue 43).
//
// The scan either reads the whole event exactly as the general reader would, or reads nothing
// and leaves it to the general reader, which also gives the exact error for malformed input.
// tests/analysis/kineto_event_scan_test.cc holds both readers to the same events, on the
// corpus and on mutated events.

#include <cstddef>

#include "analysis/kineto_event.h"

namespace fleetprof::analysis {

// Reads the event object that starts at `p` (its '{') into `event` when all of it lies in
// [p, end) and it keeps to the usual layout. Returns the byte after its closing '}', or null
// (nothing read, `event` to be reset) for anything else: an event cut by the buffer's end, a
// string with an escape, a string field longer than `name_cap` bytes, a field of another JSON
// type than the usual one, a skipped value nested deeper than `max_depth` (the general
// reader's limit) or 32 levels, a time out of range, or malformed JSON.
const char* ScanKinetoEvent(const char* p, const char* end, size_t name_cap, int64_t max_depth,
                            KinetoRawEvent* event);

}  // namespace fleetprof::analysis
