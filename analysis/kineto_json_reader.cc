#include "analysis/kineto_json_reader.h"

#include <atomic>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "analysis/decimal_time.h"
#include "analysis/json_tokenizer.h"
#include "analysis/kineto_event.h"
#include "analysis/kineto_event_scan.h"
#include "analysis/trace_events_append.h"
#include "common/runtime.h"
#include "common/threads.h"

namespace fleetprof::analysis {
namespace {

using Number = KinetoRawEvent::Number;

std::atomic<int64_t> far_parts_taken{0};
std::atomic<int64_t> events_scanned{0};

// Below this many bytes one thread reads the whole file: a second costs more than it saves.
std::atomic<uint64_t> split_min_bytes{uint64_t{8} << 20};
// How much of the file the far part looks through for its first event (some hundreds).
constexpr size_t kGuessWindowBytes = 64 << 10;
// The far part's read buffer: half the first reader's, enough for memory speed.
constexpr size_t kFarBufferBytes = 64 << 10;
// How many bytes the fast lane has at hand when it reads an event (a sixteenth of the far part's buffer).
constexpr size_t kScanWindowBytes = 4 << 10;
// Off only in tests that hold the general reader to the fast lane (SetKinetoEventScan).
std::atomic<bool> scan_events_enabled{true};

// Where a second thread may start reading events: a '{' at or after `from` in `text` that
// follows '}' and ',' (whitespace between), as between two events of an array; the first one
// that begins a line if any (Kineto writes an event per line, and the arrays of objects in args
// on one line), else the first. Only a guess: the first reader confirms it (an event it reads
// starts there) or the guess is dropped.
size_t GuessEventStart(std::string_view text, size_t from) {
  size_t first = std::string_view::npos;
  for (size_t i = from; i < text.size(); ++i) {
    const void* hit = std::memchr(text.data() + i, '{', text.size() - i);
    if (hit == nullptr) break;
    i = static_cast<size_t>(static_cast<const char*>(hit) - text.data());
    size_t j = i;
    bool new_line = false;
    while (j > 0 && IsJsonSpace(text[j - 1])) new_line |= text[--j] == '\n';
    if (j == 0 || text[j - 1] != ',') continue;
    --j;
    while (j > 0 && IsJsonSpace(text[j - 1])) --j;
    if (j == 0 || text[j - 1] != '}') continue;
    if (new_line) return i;
    if (first == std::string_view::npos) first = i;
  }
  return first;
}

class KinetoJsonReader;

// The far part of a large file, read on a second thread by a reader of its own into events of
// its own, from an event start it guessed (`start`) to the ']' that closes the array. The first
// reader takes it over when it reaches that very event: the split is exact, or unused.
struct FarPart {
  static constexpr uint64_t kNoStart = std::numeric_limits<uint64_t>::max();      // not yet
  static constexpr uint64_t kNoEventFound = std::numeric_limits<uint64_t>::max() - 1;
  std::atomic<uint64_t> start{kNoStart};  // published once the guess is made
  std::atomic<bool> stop{false};          // the first reader went past `start`
  uint64_t from = 0;                      // where the guess begins
  std::unique_ptr<ByteSource> source;
  std::unique_ptr<JsonTokenizer> tok;     // after the ']' once done
  TraceEvents events;
  bool done = false;                      // read to the ']' without error
  std::thread thread;

  ~FarPart() {
    stop.store(true, std::memory_order_relaxed);
    if (thread.joinable()) thread.join();
  }
};

class KinetoJsonReader {
 public:
  KinetoJsonReader(ByteSource& source, TraceEvents* out,
                   size_t buffer_bytes = JsonTokenizer::kDefaultBufferBytes)
      : source_(source),
        own_tok_(std::make_unique<JsonTokenizer>(source, buffer_bytes)),
        tok_(own_tok_.get()),
        out_(out),
        sink_(out),
        name_cap_(static_cast<size_t>(out->limits.max_name_bytes)) {
    tok_->set_max_depth(out->limits.max_trace_depth);
  }
  ~KinetoJsonReader() { events_scanned.fetch_add(scanned_, std::memory_order_relaxed); }

  absl::Status Read();
  bool started_far_part() const { return started_far_part_; }
  // Second thread: reads `far`'s events from its guessed start (kineto_json_reader.h).
  static void ReadFarPart(FarPart* far, uint64_t from);

 private:
  // Starts the second thread when the source can be read twice and is large enough.
  void StartFarPart(ByteSource& source);
  // At the event at `offset`: takes the far part over when it starts here; drops it once past.
  // True when taken: the array was read to its ']' and tok_ stands after it.
  bool TakeFarPart(uint64_t offset);
  bool ReadTopObject();
  bool ReadEvents();
  // The elements of an events array after its '['.
  bool ReadElements();
  // The fast lane (kineto_event_scan.h): true when it read the event at the cursor into
  // event_; false when it read nothing (or the buffer could not be filled: status set).
  bool ScanEvent();
  bool ReadEvent();
  bool ReadArgs();
  bool ReadDistributedInfo();
  bool ReadDeviceProperties();

  // Value readers for the event fields; a value of the wrong type is skipped and flagged.
  // A text field is copied into `copy` (the buffer may move before the event is whole) and
  // viewed by `field`.
  bool ReadStringField(std::string_view* field, std::string* copy, bool* has);
  bool ReadIdField(std::string_view* field, std::string* copy, bool* has);  // string or number, kept as text
  // Reads a number's text; a string or container in its place is skipped (is_number false).
  bool ReadNumberToken(std::string_view* token, bool* is_number);
  bool ReadTimeField(const char* key, Number* state, int64_t* ns);
  bool ReadIntField(int64_t* value, bool* has);
  // A scalar (string, number, bool, null) as text; *has false for objects and arrays.
  bool ReadScalarText(std::string* text, bool* has);

  ByteSource& source_;
  std::unique_ptr<ByteSource> far_source_;  // what the far part's tokenizer reads, once taken
  std::unique_ptr<JsonTokenizer> own_tok_;
  JsonTokenizer* tok_;  // own_tok_, or the far part's once taken over
  std::unique_ptr<FarPart> far_;
  const std::atomic<bool>* stop_ = nullptr;  // the far part's reader: set when it is not needed
  bool started_far_part_ = false;
  TraceEvents* out_;
  KinetoEventSink sink_;
  KinetoRawEvent event_;
  std::string scratch_;
  size_t name_cap_;
  const bool scan_events_ = scan_events_enabled.load(std::memory_order_relaxed);
  int64_t scanned_ = 0;  // events the fast lane read
};

absl::Status KinetoJsonReader::Read() {
  out_->format = TraceFormat::kKinetoJson;
  char c = 0;
  if (split_min_bytes.load(std::memory_order_relaxed) > 0) StartFarPart(source_);
  bool ok = tok_->Peek(&c, "'{' or '[' starting a Chrome trace");
  if (ok) {
    if (c == '{') {
      ok = ReadTopObject();
    } else if (c == '[') {
      ok = ReadEvents();
    } else {
      ok = tok_->FailUnexpected(c, "'{' or '[' starting a Chrome trace");
    }
  }
  if (ok && !tok_->AtEnd()) {
    if (tok_->ok()) {
      char extra = 0;
      tok_->Peek(&extra, "end of input");
      tok_->FailUnexpected(extra, "end of input");
    }
  }
  return tok_->status();
}

bool KinetoJsonReader::ReadTopObject() {
  if (!tok_->BeginObject()) return false;
  bool saw_events = false;
  for (;;) {
    bool done;
    std::string_view key;
    if (!tok_->NextMember(&done, &key)) return false;
    if (done) {
      // Any JSON object is not a trace: without its event list it is some other file (a
      // config, a credentials file) that must not be stored as an empty profile.
      if (saw_events) return true;
      return tok_->FailWith(absl::InvalidArgumentError(absl::StrCat(
          tok_->source_name(), ": a JSON object without \"traceEvents\" is not a Chrome/Kineto trace")));
    }
    bool ok;
    if (key == "traceEvents") {
      char c = 0;
      if (!tok_->Peek(&c, "'[' starting traceEvents")) return false;
      if (c != '[') {
        return tok_->FailWith(absl::InvalidArgumentError(
            absl::StrCat(tok_->source_name(), ": \"traceEvents\" is not an array, so this is not a Chrome/Kineto trace")));
      }
      saw_events = true;
      ok = ReadEvents();
    } else if (key == "distributedInfo") {
      ok = ReadDistributedInfo();
    } else if (key == "deviceProperties") {
      ok = ReadDeviceProperties();
    } else if (key == "schemaVersion") {
      bool has = false;  // left unset when the read fails
      ok = ReadScalarText(&scratch_, &has);
      if (ok && has) out_->metadata["schema_version"] = scratch_;
    } else {
      // baseTimeNanoseconds is deliberately ignored: times stay in the trace's own clock.
      ok = tok_->SkipValue();
    }
    if (!ok) return false;
  }
}

bool KinetoJsonReader::ReadEvents() {
  char c = 0;
  if (!tok_->Peek(&c, "'[' starting traceEvents")) return false;
  if (c != '[') {
    ++out_->skipped_events;  // "traceEvents" of the wrong type: nothing to analyse
    return tok_->SkipValue();
  }
  if (!tok_->BeginArray()) return false;
  return ReadElements();
}

bool KinetoJsonReader::ReadElements() {
  char c = 0;
  for (;;) {
    bool done;
    if (!tok_->NextElement(&done)) return false;
    if (done) return true;
    if (!tok_->Peek(&c, "event")) return false;
    if (far_ != nullptr && c == '{' && TakeFarPart(tok_->Offset())) return true;
    if (stop_ != nullptr && stop_->load(std::memory_order_relaxed)) {
      return tok_->FailWith(absl::CancelledError("the far part is not needed"));
    }
    ++out_->events;
    if (c != '{') {
      ++out_->skipped_events;
      if (!tok_->SkipValue()) return false;
      continue;
    }
    const uint64_t offset = tok_->Offset();
    if (!ScanEvent() && !ReadEvent()) return false;
    if (!sink_.Add(event_)) {
      const std::string times = !event_.out_of_range.empty()
                                    ? event_.out_of_range
                                    : absl::StrCat("ts ", event_.ts_ns, " ns, dur ", event_.dur_ns, " ns");
      return tok_->FailWith(out_->TimeRangeError(tok_->source_name(), offset, times));
    }
    if (!out_->WithinLimits()) return tok_->FailWith(out_->LimitError(tok_->source_name(), offset));
  }
}

void KinetoJsonReader::StartFarPart(ByteSource& source) {
  const int64_t size = source.SizeHint();
  if (size < 0 || static_cast<uint64_t>(size) < split_min_bytes.load(std::memory_order_relaxed)) return;
  // Past --max_trace_mb the read fails at the cap: no far part to skip (inflate) towards it.
  if (static_cast<uint64_t>(size) > static_cast<uint64_t>(out_->limits.max_trace_mb) << 20) return;
  std::unique_ptr<ByteSource> again = source.Reopen();
  if (again == nullptr) return;
  // Both threads should end together. A file's far part seeks to its start: halves. A gzip
  // stream's far part inflates all it skips, so it starts further on (measured best near 56%).
  const uint64_t from = static_cast<uint64_t>(size) / 100 * (source.SkipReadsThrough() ? 56 : 50);
  auto far = std::make_unique<FarPart>();
  far->source = std::move(again);
  far->events.limits = out_->limits;
  far->events.format = out_->format;
  far->from = from;
  FarPart* part = far.get();
  absl::StatusOr<std::thread> thread =
      StartThread(absl::StrCat("the far-part reader of ", source.name()), [part, from] { ReadFarPart(part, from); });
  if (!thread.ok()) return;  // no thread to spare: this one reads it all
  far->thread = *std::move(thread);
  far_ = std::move(far);
  started_far_part_ = true;
}

void KinetoJsonReader::ReadFarPart(FarPart* far, uint64_t from) {
  uint64_t start = FarPart::kNoEventFound;
  std::string window;
  absl::StatusOr<uint64_t> skipped = far->source->Skip(from);
  if (skipped.ok() && *skipped == from) {
    window.resize(kGuessWindowBytes);
    size_t filled = 0;
    while (filled < window.size()) {
      absl::StatusOr<size_t> got = far->source->Read(window.data() + filled, window.size() - filled);
      if (!got.ok() || *got == 0) break;
      filled += *got;
    }
    window.resize(filled);
    const size_t at = GuessEventStart(window, 0);
    if (at != std::string_view::npos) {
      start = from + at;
      window.erase(0, at);
    }
  }
  if (start == FarPart::kNoEventFound) {
    far->start.store(start, std::memory_order_release);
    far->start.notify_all();
    return;
  }
  far->source = PrefixedSource(std::move(window), std::move(far->source));
  KinetoJsonReader reader(*far->source, &far->events, kFarBufferBytes);
  reader.stop_ = &far->stop;
  reader.tok_->ResumeInArray(start);
  far->start.store(start, std::memory_order_release);
  far->start.notify_all();
  if (!reader.ReadElements()) return;
  far->tok = std::move(reader.own_tok_);
  far->done = true;
}

bool KinetoJsonReader::TakeFarPart(uint64_t offset) {
  uint64_t start = far_->start.load(std::memory_order_acquire);
  if (start == FarPart::kNoStart) {
    if (offset < far_->from) return false;
    // Past where the guess begins: it is moments away, and without it all is read twice.
    far_->start.wait(FarPart::kNoStart, std::memory_order_acquire);
    start = far_->start.load(std::memory_order_acquire);
  }
  if (start == FarPart::kNoEventFound) {
    far_.reset();
    return false;
  }
  if (offset < start) return false;
  bool taken = false;
  if (offset == start) {
    far_->thread.join();
    if (far_->done && FitWithinLimitsTogether(*out_, far_->events)) {
      source_.StopReading();  // all it still holds is what the far part has read
      AppendEvents(out_, std::move(far_->events));
      far_source_ = std::move(far_->source);
      own_tok_ = std::move(far_->tok);
      tok_ = own_tok_.get();
      taken = true;
      far_parts_taken.fetch_add(1, std::memory_order_relaxed);
    }
  }
  far_.reset();  // past its start, or unusable: stops and joins its thread
  return taken;
}

bool KinetoJsonReader::ScanEvent() {
  if (!scan_events_) return false;
  // Most events are some hundred bytes: with this much at hand few are cut by the buffer's
  // end, and the bytes moved to the buffer's start on each refill stay a few percent.
  if (!tok_->Prefetch(kScanWindowBytes)) return false;
  event_.Reset();
  const char* end = ScanKinetoEvent(tok_->cursor(), tok_->limit(), name_cap_, tok_->max_depth(), &event_);
  if (end == nullptr) return false;
  tok_->ConsumeTo(end);
  ++scanned_;
  return true;
}

bool KinetoJsonReader::ReadEvent() {
  event_.Reset();
  if (!tok_->BeginObject()) return false;
  for (;;) {
    bool done;
    std::string_view key;
    if (!tok_->NextMember(&done, &key)) return false;
    if (done) return true;
    bool ok;
    switch (key.size()) {
      case 2:
        if (key == "ph") {
          ok = ReadStringField(&event_.ph, &event_.copies.ph, &event_.has_ph);
        } else if (key == "ts") {
          ok = ReadTimeField("ts", &event_.ts, &event_.ts_ns);
        } else {
          ok = tok_->SkipValue();
        }
        break;
      case 3:
        if (key == "cat") {
          ok = ReadStringField(&event_.cat, &event_.copies.cat, &event_.has_cat);
        } else if (key == "dur") {
          ok = ReadTimeField("dur", &event_.dur, &event_.dur_ns);
        } else if (key == "pid") {
          ok = ReadIdField(&event_.pid, &event_.copies.pid, &event_.has_pid);
        } else if (key == "tid") {
          ok = ReadIdField(&event_.tid, &event_.copies.tid, &event_.has_tid);
        } else {
          ok = tok_->SkipValue();
        }
        break;
      case 4:
        if (key == "name") {
          ok = ReadStringField(&event_.name, &event_.copies.name, &event_.has_name);
        } else if (key == "args") {
          char c = 0;
          ok = tok_->Peek(&c, "value");
          if (ok) ok = c == '{' ? ReadArgs() : tok_->SkipValue();
        } else {
          ok = tok_->SkipValue();
        }
        break;
      default:
        ok = tok_->SkipValue();
    }
    if (!ok) return false;
  }
}

bool KinetoJsonReader::ReadArgs() {
  if (!tok_->BeginObject()) return false;
  for (;;) {
    bool done;
    std::string_view key;
    if (!tok_->NextMember(&done, &key)) return false;
    if (done) return true;
    bool ok;
    if (key == "device") {
      ok = ReadIdField(&event_.device, &event_.copies.device, &event_.has_device);
    } else if (key == "correlation") {
      ok = ReadIntField(&event_.correlation, &event_.has_correlation);
    } else if (key == "Device Id") {
      ok = ReadIntField(&event_.memory_device_id, &event_.has_memory_device_id);
    } else if (key == "Total Allocated") {
      ok = ReadIntField(&event_.total_allocated, &event_.has_total_allocated);
    } else if (key == "Bytes") {
      ok = ReadIntField(&event_.bytes, &event_.has_bytes);
    } else if (key == "bytes") {  // a copy's or memset's size
      ok = ReadIntField(&event_.copy_bytes, &event_.has_copy_bytes);
    } else if (key == "In msg nelems") {
      ok = ReadIntField(&event_.msg_nelems, &event_.has_msg_nelems);
    } else if (key == "dtype") {
      ok = ReadStringField(&event_.dtype, &event_.copies.dtype, &event_.has_dtype);
    } else {
      ok = tok_->SkipValue();
    }
    if (!ok) return false;
  }
}

bool KinetoJsonReader::ReadStringField(std::string_view* field, std::string* copy, bool* has) {
  char c = 0;
  if (!tok_->Peek(&c, "value")) return false;
  if (c != '"') {
    event_.bad_type = true;
    *has = false;
    return tok_->SkipValue();
  }
  std::string_view value;
  if (!tok_->ReadString(&value, &scratch_, name_cap_, nullptr)) return false;
  copy->assign(value);
  *field = *copy;
  *has = true;
  return true;
}

bool KinetoJsonReader::ReadIdField(std::string_view* field, std::string* copy, bool* has) {
  char c = 0;
  if (!tok_->Peek(&c, "value")) return false;
  if (c == '"') return ReadStringField(field, copy, has);
  if (c == '{' || c == '[') {
    event_.bad_type = true;
    *has = false;
    return tok_->SkipValue();
  }
  std::string_view token;
  if (!tok_->ReadScalar(&token)) return false;
  copy->assign(token);
  *field = *copy;
  *has = true;
  return true;
}

bool KinetoJsonReader::ReadNumberToken(std::string_view* token, bool* is_number) {
  char c = 0;
  if (!tok_->Peek(&c, "value")) return false;
  *is_number = !(c == '"' || c == '{' || c == '[');
  if (!*is_number) return tok_->SkipValue();  // a string or container where a number belongs
  return tok_->ReadScalar(token);
}

bool KinetoJsonReader::ReadTimeField(const char* key, Number* state, int64_t* ns) {
  std::string_view token;
  bool is_number = false;
  if (!ReadNumberToken(&token, &is_number)) return false;
  const DecimalParse parsed = is_number ? ParseMicrosAsNanos(token, ns) : DecimalParse::kNotANumber;
  *state = parsed == DecimalParse::kOk           ? Number::kOk
           : parsed == DecimalParse::kOutOfRange ? Number::kOutOfRange
                                                 : Number::kBad;
  if (*state == Number::kOutOfRange) event_.out_of_range = absl::StrCat(key, " ", std::string(token), " us");
  return true;
}

bool KinetoJsonReader::ReadIntField(int64_t* value, bool* has) {
  std::string_view token;
  bool is_number = false;
  if (!ReadNumberToken(&token, &is_number)) return false;
  *has = is_number && ParseJsonInt64(token, value);
  return true;
}

bool KinetoJsonReader::ReadScalarText(std::string* text, bool* has) {
  char c = 0;
  if (!tok_->Peek(&c, "value")) return false;
  *has = false;
  if (c == '{' || c == '[') return tok_->SkipValue();
  std::string_view value;
  if (c == '"') {
    if (!tok_->ReadString(&value, &scratch_, name_cap_, nullptr)) return false;
  } else if (!tok_->ReadScalar(&value)) {
    return false;
  }
  text->assign(value);
  *has = true;
  return true;
}

bool KinetoJsonReader::ReadDistributedInfo() {
  char c = 0;
  if (!tok_->Peek(&c, "value")) return false;
  if (c != '{') return tok_->SkipValue();
  if (!tok_->BeginObject()) return false;
  std::string key;
  for (;;) {
    bool done;
    std::string_view key_view;
    if (!tok_->NextMember(&done, &key_view)) return false;
    if (done) return true;
    key.assign(key_view);
    bool has = false;
    std::string value;
    if (!ReadScalarText(&value, &has)) return false;
    if (has) out_->metadata[key] = value;  // rank, world_size, backend, …
  }
}

bool KinetoJsonReader::ReadDeviceProperties() {
  char c = 0;
  if (!tok_->Peek(&c, "value")) return false;
  if (c != '[') return tok_->SkipValue();
  if (!tok_->BeginArray()) return false;
  for (;;) {
    bool done;
    if (!tok_->NextElement(&done)) return false;
    if (done) return true;
    if (!tok_->Peek(&c, "value")) return false;
    if (c != '{') {
      if (!tok_->SkipValue()) return false;
      continue;
    }
    if (!tok_->BeginObject()) return false;
    std::string id, name, memory;
    bool has_id = false, has_name = false, has_memory = false;
    for (;;) {
      std::string_view key;
      if (!tok_->NextMember(&done, &key)) return false;
      if (done) break;
      bool ok;
      if (key == "id") {
        ok = ReadScalarText(&id, &has_id);
      } else if (key == "name") {
        ok = ReadScalarText(&name, &has_name);
      } else if (key == "totalGlobalMem") {
        ok = ReadScalarText(&memory, &has_memory);
      } else {
        ok = tok_->SkipValue();
      }
      if (!ok) return false;
    }
    if (!has_id) continue;
    if (has_name) out_->metadata[absl::StrCat("device.", id, ".name")] = name;
    if (has_memory) out_->metadata[absl::StrCat("device.", id, ".total_global_mem")] = memory;
  }
}

}  // namespace

void SetKinetoEventScan(bool enabled) { scan_events_enabled.store(enabled, std::memory_order_relaxed); }

void SetKinetoSplitMinBytes(uint64_t bytes) { split_min_bytes.store(bytes, std::memory_order_relaxed); }

int64_t KinetoEventsScanned() { return events_scanned.load(std::memory_order_relaxed); }

int64_t KinetoFarPartsTaken() { return far_parts_taken.load(std::memory_order_relaxed); }

absl::Status ReadKinetoJson(ByteSource& source, TraceEvents* out) {
  bool started_far_part = false;
  absl::Status status;
  {
    KinetoJsonReader reader(source, out);
    status = reader.Read();
    started_far_part = reader.started_far_part();
  }
  // What the far part's thread allocated and freed stays in a malloc arena of that thread's,
  // where this thread's next allocations (the summaries) cannot reuse it: give it back.
  if (started_far_part) ReleaseFreeMemory();
  return status;
}

}  // namespace fleetprof::analysis
