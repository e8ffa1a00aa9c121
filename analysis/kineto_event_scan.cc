#include "analysis/kineto_event_scan.h"

#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "analysis/decimal_time.h"
#include "analysis/json_scan.h"

namespace fleetprof::analysis {
namespace {

using Number = KinetoRawEvent::Number;
using json_scan::FindQuoteOrBackslash;
using json_scan::SkipSpaceRun;

// The bytes of a bare token (a number, true, false, null, NaN, Infinity): json_scan's
// IsScalarChar as a table, one load per byte.
constexpr std::array<bool, 256> kScalarByte = [] {
  std::array<bool, 256> table{};
  for (int c = 0; c < 256; ++c) table[c] = json_scan::IsScalarChar(static_cast<char>(c));
  return table;
}();

// `key == literal` with the length known at compile time, so the compare is a load or two
// instead of a call to memcmp (keys are compared a few times per event).
template <size_t N>
bool Is(std::string_view key, const char (&literal)[N]) {
  return key.size() == N - 1 && std::memcmp(key.data(), literal, N - 1) == 0;
}

// A cursor over [p, end). Every method returns false to give the event up to the general
// reader: the scan never fails an event itself.
class EventScan {
 public:
  EventScan(const char* p, const char* end, size_t name_cap, int64_t max_depth)
      : p_(p), end_(end), name_cap_(name_cap), max_depth_(max_depth) {}

  const char* position() const { return p_; }

  // Skips whitespace; false when the buffer ends first.
  bool Space() {
    p_ = SkipSpaceRun(p_, end_);
    return p_ < end_;
  }
  bool At(char c) { return Space() && *p_ == c; }
  bool Consume(char c) {
    if (!At(c)) return false;
    ++p_;
    return true;
  }

  // At '"': the string's bytes, and p_ past its closing quote. No escapes.
  bool String(std::string_view* out) {
    const char* q = FindQuoteOrBackslash(p_ + 1, end_);
    if (q == end_ || *q != '"') return false;
    *out = std::string_view(p_ + 1, static_cast<size_t>(q - p_ - 1));
    p_ = q + 1;
    return true;
  }
  // A string value the general reader would keep whole (not cut at name_cap).
  bool KeptString(std::string_view* out) { return At('"') && String(out) && out->size() <= name_cap_; }

  // A bare token, non-empty, ending inside the buffer (JsonTokenizer::ReadScalar).
  bool Token(std::string_view* out) {
    if (!Space()) return false;
    const char* q = p_;
    while (q < end_ && kScalarByte[static_cast<unsigned char>(*q)]) ++q;
    if (q == end_ || q == p_) return false;
    *out = std::string_view(p_, static_cast<size_t>(q - p_));
    p_ = q;
    return true;
  }

  // A key and its ':'. Keys the general reader would cut are given up.
  bool Key(std::string_view* key) {
    return String(key) && key->size() <= JsonTokenizer::kMaxKeyBytes && Consume(':');
  }

  // After a member's value: past ',' and at the next key's '"' (*done false), or past the
  // closing '}' (*done true).
  bool NextMember(bool* done) {
    if (!Space()) return false;
    if (*p_ == '}') {
      ++p_;
      *done = true;
      return true;
    }
    if (*p_ != ',') return false;
    ++p_;
    *done = false;
    return At('"');
  }
  // Just past '{': at the first key's '"' (*done false), or past '}' (*done true).
  bool FirstMember(bool* done) {
    if (!Space()) return false;
    if (*p_ == '}') {
      ++p_;
      *done = true;
      return true;
    }
    *done = false;
    return *p_ == '"';
  }

  // Skips a value the way JsonTokenizer::SkipValue does.
  bool SkipValue() {
    if (!Space()) return false;
    std::string_view text;
    switch (*p_) {
      case '"':
        return String(&text);
      case '[':
      case '{':
        return SkipContainer();
      default:
        if (!Token(&text)) return false;
        return (text[0] >= '0' && text[0] <= '9') || text[0] == '-' || text == "true" || text == "false" ||
               text == "null" || text == "NaN" || text == "Infinity";
    }
  }

  // ph, cat, name, dtype: a string (KinetoJsonReader::ReadStringField).
  bool StringField(std::string_view* field, bool* has) {
    if (!KeptString(field)) return false;
    *has = true;
    return true;
  }
  // pid, tid, device: a string or a bare token, kept as text (ReadIdField).
  bool IdField(std::string_view* field, bool* has) {
    if (!Space()) return false;
    if (*p_ == '"') return StringField(field, has);
    if (*p_ == '{' || *p_ == '[') return false;
    if (!Token(field)) return false;
    *has = true;
    return true;
  }
  // ts, dur: a number of microseconds within range (ReadTimeField).
  bool TimeField(Number* state, int64_t* ns) {
    std::string_view token;
    if (!NumberToken(&token) || ParseMicrosAsNanos(token, ns) != DecimalParse::kOk) return false;
    *state = Number::kOk;
    return true;
  }
  // correlation, sizes: an integer token; one that is no JSON integer reads as absent
  // (ReadIntField).
  bool IntField(int64_t* value, bool* has) {
    std::string_view token;
    if (!NumberToken(&token)) return false;
    *has = ParseJsonInt64(token, value);
    return true;
  }

 private:
  bool NumberToken(std::string_view* token) {
    if (!Space() || *p_ == '"' || *p_ == '{' || *p_ == '[') return false;
    return Token(token);
  }

  // JsonTokenizer::SkipContainer within the buffer: brackets and strings only are checked,
  // and a container may open while fewer than max_depth are open, as there. p_ is at '[' or '{'.
  bool SkipContainer() {
    char open[kMaxSkipDepth];
    int64_t depth = 0;
    for (const char* q = p_; q < end_; ++q) {
      const char c = *q;
      if (c == '"') {
        p_ = q;
        std::string_view text;
        if (!String(&text)) return false;
        q = p_ - 1;
      } else if (c == '{' || c == '[') {
        if (depth >= max_depth_ || depth == kMaxSkipDepth) return false;
        open[depth++] = c;
      } else if (c == '}' || c == ']') {
        if ((open[depth - 1] == '{') != (c == '}')) return false;
        if (--depth == 0) {
          p_ = q + 1;
          return true;
        }
      }
    }
    return false;
  }

  // Deeper values are left to the general reader (whose limit is --max_trace_depth).
  static constexpr int64_t kMaxSkipDepth = 32;

  const char* p_;
  const char* end_;
  size_t name_cap_;
  int64_t max_depth_;
};

// The members of "args" after its '{' (KinetoJsonReader::ReadArgs).
bool ScanArgs(EventScan& scan, KinetoRawEvent* e) {
  bool done = false;
  if (!scan.FirstMember(&done)) return false;
  while (!done) {
    std::string_view key;
    if (!scan.Key(&key)) return false;
    bool ok;
    if (Is(key, "device")) {
      ok = scan.IdField(&e->device, &e->has_device);
    } else if (Is(key, "correlation")) {
      ok = scan.IntField(&e->correlation, &e->has_correlation);
    } else if (Is(key, "Device Id")) {
      ok = scan.IntField(&e->memory_device_id, &e->has_memory_device_id);
    } else if (Is(key, "Total Allocated")) {
      ok = scan.IntField(&e->total_allocated, &e->has_total_allocated);
    } else if (Is(key, "Bytes")) {
      ok = scan.IntField(&e->bytes, &e->has_bytes);
    } else if (Is(key, "bytes")) {
      ok = scan.IntField(&e->copy_bytes, &e->has_copy_bytes);
    } else if (Is(key, "In msg nelems")) {
      ok = scan.IntField(&e->msg_nelems, &e->has_msg_nelems);
    } else if (Is(key, "dtype")) {
      ok = scan.StringField(&e->dtype, &e->has_dtype);
    } else {
      ok = scan.SkipValue();
    }
    if (!ok || !scan.NextMember(&done)) return false;
  }
  return true;
}

// One member of the event object, its key read (KinetoJsonReader::ReadEvent).
bool ScanMember(EventScan& scan, std::string_view key, KinetoRawEvent* e) {
  switch (key.size()) {
    case 2:
      if (Is(key, "ph")) return scan.StringField(&e->ph, &e->has_ph);
      if (Is(key, "ts")) return scan.TimeField(&e->ts, &e->ts_ns);
      break;
    case 3:
      if (Is(key, "cat")) return scan.StringField(&e->cat, &e->has_cat);
      if (Is(key, "dur")) return scan.TimeField(&e->dur, &e->dur_ns);
      if (Is(key, "pid")) return scan.IdField(&e->pid, &e->has_pid);
      if (Is(key, "tid")) return scan.IdField(&e->tid, &e->has_tid);
      break;
    case 4:
      if (Is(key, "name")) return scan.StringField(&e->name, &e->has_name);
      if (Is(key, "args")) {
        if (!scan.Space()) return false;
        if (*scan.position() != '{') return scan.SkipValue();
        return scan.Consume('{') && ScanArgs(scan, e);
      }
      break;
    default:
      break;
  }
  return scan.SkipValue();
}

}  // namespace

const char* ScanKinetoEvent(const char* p, const char* end, size_t name_cap, int64_t max_depth,
                            KinetoRawEvent* event) {
  if (p == end || *p != '{') return nullptr;
  EventScan scan(p + 1, end, name_cap, max_depth);
  bool done = false;
  if (!scan.FirstMember(&done)) return nullptr;
  while (!done) {
    std::string_view key;
    if (!scan.Key(&key) || !ScanMember(scan, key, event) || !scan.NextMember(&done)) return nullptr;
  }
  return scan.position();
}

}  // namespace fleetprof::analysis
