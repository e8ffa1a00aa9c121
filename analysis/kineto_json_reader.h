#pragma once
// Streaming reader of Chrome-trace JSON as written by the PyTorch profiler (Kineto, both the
// current and the 2021 schema), torch-neuronx and the legacy autograd profiler: an object
// with "traceEvents" (plus "distributedInfo", "deviceProperties", …) or a bare array of
// events. The text is never held whole: memory is one read buffer plus the compact records.
// Each event is first offered to a fast lane (kineto_event_scan.h) that reads the usual layout
// straight from the buffer; what it does not take, this reader reads, with the same result.
//
// Malformed events are skipped and counted in TraceEvents::skipped_events, never fatal:
//  - an array element that is not an object, or an event without a string "ph";
//  - a complete ("X") event without a string "name"; whose "ts" or "dur" is missing or not a
//    JSON number (a string, NaN, Infinity, null …); whose "dur" is negative; whose "cat"/"pid"/"tid" has the wrong type; or device activity with
//    neither args.device nor pid;
//  - a "[memory]" instant without a numeric "ts", args "Device Id" and "Total Allocated" or
//    "Bytes".
// X events whose "cat" fleetprof does not know are host events (docs/analysis.md, Host events), and
// are also counted in TraceEvents::unknown_category_events.
// Names longer than kMaxNameBytes are truncated to their first kMaxNameBytes bytes.
//
// Errors (absl::Status, naming the source and byte offset): text that is not JSON, a
// top-level value that is neither object nor array, an object without a "traceEvents"
// array (INVALID_ARGUMENT: some other JSON file, not a trace), a value nested deeper than
// JsonTokenizer::kMaxSkipDepth levels, an event whose time lies outside ±kMaxAbsTicks ns
// (trace_events.h: later arithmetic on it could overflow), and truncated input ("FILE:
// unexpected end of input at byte N, expected …").

#include "absl/status/status.h"
#include "analysis/byte_source.h"
#include "analysis/trace_events.h"

namespace fleetprof::analysis {

// Reads `source` to its end into `out` (format, events, metadata).
//
// A source that can be read twice (a file: ByteSource::Reopen) of at least
// SetKinetoSplitMinBytes bytes (8 MiB by default, after gunzip) is read by two threads: a second
// one skips to the middle (56% of a gzip stream, which it inflates on its own thread to get
// there), guesses where an event starts there and reads from it to the end of
// the event array into events of its own, while this one reads from the start. When this reader
// reaches an event at the very byte guessed, the second one's events are appended (names
// re-interned in their order) and reading goes on after the array with its tokenizer; when it
// does not (a wrong guess, an error or a limit in the far part), the far part is dropped and this
// reader reads on alone. Either way the result, errors included, is that of one reader.
absl::Status ReadKinetoJson(ByteSource& source, TraceEvents* out);

// Whether events in the usual layout are read by the fast lane (kineto_event_scan.h; on by
// default). Off only to hold the general reader to the same results in tests.
void SetKinetoEventScan(bool enabled);
// How many events this process's readers read by the fast lane (for tests: that it is used).
int64_t KinetoEventsScanned();

// The smallest stream (bytes, as SizeHint says) that two threads read; 0: never. For tests, and
// for measuring one thread against two.
void SetKinetoSplitMinBytes(uint64_t bytes);
// How many far parts this process's readers took over (for tests: that a split happened).
int64_t KinetoFarPartsTaken();

}  // namespace fleetprof::analysis
