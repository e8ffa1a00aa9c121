#include "analysis/kineto_json_reader.h"

#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "analysis/decimal_time.h"
#include "analysis/json_tokenizer.h"
#include "analysis/kineto_event.h"

namespace fleetprof::analysis {
namespace {

using Number = KinetoRawEvent::Number;

class KinetoJsonReader {
 public:
  KinetoJsonReader(ByteSource& source, TraceEvents* out)
      : tok_(source), out_(out), sink_(out), name_cap_(static_cast<size_t>(out->limits.max_name_bytes)) {
    tok_.set_max_depth(out->limits.max_trace_depth);
  }

  absl::Status Read();

 private:
  bool ReadTopObject();
  bool ReadEvents();
  bool ReadEvent();
  bool ReadArgs();
  bool ReadDistributedInfo();
  bool ReadDeviceProperties();

  // Value readers for the event fields; a value of the wrong type is skipped and flagged.
  bool ReadStringField(std::string* field, bool* has);
  bool ReadIdField(std::string* field, bool* has);  // string or number, kept as text
  // Reads a number's text; a string or container in its place is skipped (is_number false).
  bool ReadNumberToken(std::string_view* token, bool* is_number);
  bool ReadTimeField(const char* key, Number* state, int64_t* ns);
  bool ReadIntField(int64_t* value, bool* has);
  // A scalar (string, number, bool, null) as text; *has false for objects and arrays.
  bool ReadScalarText(std::string* text, bool* has);

  JsonTokenizer tok_;
  TraceEvents* out_;
  KinetoEventSink sink_;
  KinetoRawEvent event_;
  std::string scratch_;
  size_t name_cap_;
};

absl::Status KinetoJsonReader::Read() {
  out_->format = TraceFormat::kKinetoJson;
  char c = 0;
  bool ok = tok_.Peek(&c, "'{' or '[' starting a Chrome trace");
  if (ok) {
    if (c == '{') {
      ok = ReadTopObject();
    } else if (c == '[') {
      ok = ReadEvents();
    } else {
      ok = tok_.FailUnexpected(c, "'{' or '[' starting a Chrome trace");
    }
  }
  if (ok && !tok_.AtEnd()) {
    if (tok_.ok()) {
      char extra = 0;
      tok_.Peek(&extra, "end of input");
      tok_.FailUnexpected(extra, "end of input");
    }
  }
  return tok_.status();
}

bool KinetoJsonReader::ReadTopObject() {
  if (!tok_.BeginObject()) return false;
  bool saw_events = false;
  for (;;) {
    bool done;
    std::string_view key;
    if (!tok_.NextMember(&done, &key)) return false;
    if (done) {
      // Any JSON object is not a trace: without its event list it is some other file (a
      // config, a credentials file) that must not be stored as an empty profile.
      if (saw_events) return true;
      return tok_.FailWith(absl::InvalidArgumentError(absl::StrCat(
          tok_.source_name(), ": a JSON object without \"traceEvents\" is not a Chrome/Kineto trace")));
    }
    bool ok;
    if (key == "traceEvents") {
      char c = 0;
      if (!tok_.Peek(&c, "'[' starting traceEvents")) return false;
      if (c != '[') {
        return tok_.FailWith(absl::InvalidArgumentError(
            absl::StrCat(tok_.source_name(), ": \"traceEvents\" is not an array, so this is not a Chrome/Kineto trace")));
      }
      saw_events = true;
      ok = ReadEvents();
    } else if (key == "distributedInfo") {
      ok = ReadDistributedInfo();
    } else if (key == "deviceProperties") {
      ok = ReadDeviceProperties();
    } else if (key == "schemaVersion") {
      bool has;
      ok = ReadScalarText(&scratch_, &has);
      if (has) out_->metadata["schema_version"] = scratch_;
    } else {
      // baseTimeNanoseconds is deliberately ignored: times stay in the trace's own clock.
      ok = tok_.SkipValue();
    }
    if (!ok) return false;
  }
}

bool KinetoJsonReader::ReadEvents() {
  char c = 0;
  if (!tok_.Peek(&c, "'[' starting traceEvents")) return false;
  if (c != '[') {
    ++out_->skipped_events;  // "traceEvents" of the wrong type: nothing to analyse
    return tok_.SkipValue();
  }
  if (!tok_.BeginArray()) return false;
  for (;;) {
    bool done;
    if (!tok_.NextElement(&done)) return false;
    if (done) return true;
    ++out_->events;
    if (!tok_.Peek(&c, "event")) return false;
    if (c != '{') {
      ++out_->skipped_events;
      if (!tok_.SkipValue()) return false;
      continue;
    }
    const uint64_t offset = tok_.Offset();
    if (!ReadEvent()) return false;
    if (!sink_.Add(event_)) {
      const std::string times = !event_.out_of_range.empty()
                                    ? event_.out_of_range
                                    : absl::StrCat("ts ", event_.ts_ns, " ns, dur ", event_.dur_ns, " ns");
      return tok_.FailWith(out_->TimeRangeError(tok_.source_name(), offset, times));
    }
    if (!out_->WithinLimits()) return tok_.FailWith(out_->LimitError(tok_.source_name(), offset));
  }
}

bool KinetoJsonReader::ReadEvent() {
  event_.Reset();
  if (!tok_.BeginObject()) return false;
  for (;;) {
    bool done;
    std::string_view key;
    if (!tok_.NextMember(&done, &key)) return false;
    if (done) return true;
    bool ok;
    switch (key.size()) {
      case 2:
        if (key == "ph") {
          ok = ReadStringField(&event_.ph, &event_.has_ph);
        } else if (key == "ts") {
          ok = ReadTimeField("ts", &event_.ts, &event_.ts_ns);
        } else {
          ok = tok_.SkipValue();
        }
        break;
      case 3:
        if (key == "cat") {
          ok = ReadStringField(&event_.cat, &event_.has_cat);
        } else if (key == "dur") {
          ok = ReadTimeField("dur", &event_.dur, &event_.dur_ns);
        } else if (key == "pid") {
          ok = ReadIdField(&event_.pid, &event_.has_pid);
        } else if (key == "tid") {
          ok = ReadIdField(&event_.tid, &event_.has_tid);
        } else {
          ok = tok_.SkipValue();
        }
        break;
      case 4:
        if (key == "name") {
          ok = ReadStringField(&event_.name, &event_.has_name);
        } else if (key == "args") {
          char c = 0;
          ok = tok_.Peek(&c, "value");
          if (ok) ok = c == '{' ? ReadArgs() : tok_.SkipValue();
        } else {
          ok = tok_.SkipValue();
        }
        break;
      default:
        ok = tok_.SkipValue();
    }
    if (!ok) return false;
  }
}

bool KinetoJsonReader::ReadArgs() {
  if (!tok_.BeginObject()) return false;
  for (;;) {
    bool done;
    std::string_view key;
    if (!tok_.NextMember(&done, &key)) return false;
    if (done) return true;
    bool ok;
    if (key == "device") {
      ok = ReadIdField(&event_.device, &event_.has_device);
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
      ok = ReadStringField(&event_.dtype, &event_.has_dtype);
    } else {
      ok = tok_.SkipValue();
    }
    if (!ok) return false;
  }
}

bool KinetoJsonReader::ReadStringField(std::string* field, bool* has) {
  char c = 0;
  if (!tok_.Peek(&c, "value")) return false;
  if (c != '"') {
    event_.bad_type = true;
    *has = false;
    return tok_.SkipValue();
  }
  std::string_view value;
  if (!tok_.ReadString(&value, &scratch_, name_cap_, nullptr)) return false;
  field->assign(value);
  *has = true;
  return true;
}

bool KinetoJsonReader::ReadIdField(std::string* field, bool* has) {
  char c = 0;
  if (!tok_.Peek(&c, "value")) return false;
  if (c == '"') return ReadStringField(field, has);
  if (c == '{' || c == '[') {
    event_.bad_type = true;
    *has = false;
    return tok_.SkipValue();
  }
  std::string_view token;
  if (!tok_.ReadScalar(&token)) return false;
  field->assign(token);
  *has = true;
  return true;
}

bool KinetoJsonReader::ReadNumberToken(std::string_view* token, bool* is_number) {
  char c = 0;
  if (!tok_.Peek(&c, "value")) return false;
  *is_number = !(c == '"' || c == '{' || c == '[');
  if (!*is_number) return tok_.SkipValue();  // a string or container where a number belongs
  return tok_.ReadScalar(token);
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
  if (!tok_.Peek(&c, "value")) return false;
  *has = false;
  if (c == '{' || c == '[') return tok_.SkipValue();
  std::string_view value;
  if (c == '"') {
    if (!tok_.ReadString(&value, &scratch_, name_cap_, nullptr)) return false;
  } else if (!tok_.ReadScalar(&value)) {
    return false;
  }
  text->assign(value);
  *has = true;
  return true;
}

bool KinetoJsonReader::ReadDistributedInfo() {
  char c = 0;
  if (!tok_.Peek(&c, "value")) return false;
  if (c != '{') return tok_.SkipValue();
  if (!tok_.BeginObject()) return false;
  std::string key;
  for (;;) {
    bool done;
    std::string_view key_view;
    if (!tok_.NextMember(&done, &key_view)) return false;
    if (done) return true;
    key.assign(key_view);
    bool has;
    std::string value;
    if (!ReadScalarText(&value, &has)) return false;
    if (has) out_->metadata[key] = value;  // rank, world_size, backend, …
  }
}

bool KinetoJsonReader::ReadDeviceProperties() {
  char c = 0;
  if (!tok_.Peek(&c, "value")) return false;
  if (c != '[') return tok_.SkipValue();
  if (!tok_.BeginArray()) return false;
  for (;;) {
    bool done;
    if (!tok_.NextElement(&done)) return false;
    if (done) return true;
    if (!tok_.Peek(&c, "value")) return false;
    if (c != '{') {
      if (!tok_.SkipValue()) return false;
      continue;
    }
    if (!tok_.BeginObject()) return false;
    std::string id, name, memory;
    bool has_id = false, has_name = false, has_memory = false;
    for (;;) {
      std::string_view key;
      if (!tok_.NextMember(&done, &key)) return false;
      if (done) break;
      bool ok;
      if (key == "id") {
        ok = ReadScalarText(&id, &has_id);
      } else if (key == "name") {
        ok = ReadScalarText(&name, &has_name);
      } else if (key == "totalGlobalMem") {
        ok = ReadScalarText(&memory, &has_memory);
      } else {
        ok = tok_.SkipValue();
      }
      if (!ok) return false;
    }
    if (!has_id) continue;
    if (has_name) out_->metadata[absl::StrCat("device.", id, ".name")] = name;
    if (has_memory) out_->metadata[absl::StrCat("device.", id, ".total_global_mem")] = memory;
  }
}

}  // namespace

absl::Status ReadKinetoJson(ByteSource& source, TraceEvents* out) {
  KinetoJsonReader reader(source, out);
  return reader.Read();
}

}  // namespace fleetprof::analysis
