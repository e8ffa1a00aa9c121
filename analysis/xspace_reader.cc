#include "analysis/xspace_reader.h"

#include <functional>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "analysis/decimal_time.h"
#include "analysis/kineto_event.h"
#include "analysis/proto_reader.h"
#include "analysis/xla_op_breakdown.h"
#include "analysis/xspace_memory.h"
#include "analysis/xspace_stats.h"

namespace fleetprof::analysis {
namespace {

enum class LineKind { kOther, kStream, kXlaOps, kSteps };

LineKind ClassifyLine(std::string_view name) {
  if (name.substr(0, 8) == "Stream #") return LineKind::kStream;
  if (name == "XLA Ops") return LineKind::kXlaOps;
  if (name == "Steps") return LineKind::kSteps;
  return LineKind::kOther;
}

bool IsDevicePlane(std::string_view name) { return name.substr(0, 8) == "/device:"; }

constexpr std::string_view kHostPlane = "/host:CPU";

XlaOpCollector::Line OpsLine(LineKind kind) {
  if (kind == LineKind::kStream) return XlaOpCollector::Line::kStream;
  if (kind == LineKind::kXlaOps) return XlaOpCollector::Line::kXlaOps;
  return XlaOpCollector::Line::kUnknown;
}

// Which stats of an event the reader parses: all of them (XLA op view), only an instant's
// (allocator candidates: the duration is read before the stats in writers' field order),
// or none. kOnlyInstants: only an instant matters at all (events of the known host plane),
// so a timed event is skipped whole once its duration is read: most host events.
enum class StatsWanted { kNone, kInstants, kOnlyInstants, kAll };

ActivityKind StreamEventKind(std::string_view name) {
  if (name.substr(0, 6) == "Memcpy" || name.substr(0, 6) == "Memset") return ActivityKind::kMemory;
  return IsCollectiveKernelName(name) ? ActivityKind::kCommunication : ActivityKind::kCompute;
}

ActivityKind XlaOpKind(std::string_view name) {
  for (std::string_view prefix :
       {"all-reduce", "all-gather", "reduce-scatter", "collective-permute", "all-to-all"}) {
    if (name.substr(0, prefix.size()) == prefix) return ActivityKind::kCommunication;
  }
  return ActivityKind::kCompute;
}

// One buffered event; `start` holds the raw offset_ps until its line ends, then ticks.
struct RawEvent {
  int64_t metadata_id = 0;
  int64_t start = 0;
  int64_t dur_ps = 0;
  uint64_t offset = 0;  // of the XEvent, for errors
  bool valid = true;
};

struct PendingLine {
  LineKind kind = LineKind::kOther;
  size_t first_event = 0;
  size_t end_event = 0;
  NameId name = 0;  // the line's name: a device activity's stream
};

// Facts about all XPlane messages that share one name.
struct PlaneByName {
  bool has_stream_line = false;
  std::vector<DeviceActivity> xla_ops;  // used only if no Stream # line shows up
};

class XSpaceReader {
 public:
  XSpaceReader(ByteSource& source, TraceEvents* out) : in_(source), out_(out) {
    in_.set_name_cap(static_cast<size_t>(out->limits.max_name_bytes));
  }

  absl::Status Read();

 private:
  bool ReadPlane(uint64_t limit);
  bool ReadLine(uint64_t limit);
  // XLine.timestamp_ns, which must keep the trace's times in range.
  bool ReadLineTimestamp(int64_t* timestamp_ns);
  // One XEvent of a line of `kind` (unknown while !name_known): kept when the line may be an
  // activity line, and its stats read when the plane may have XLA ops or allocator events.
  bool ReadLineEvent(uint64_t limit, LineKind kind, bool name_known);
  bool ReadEvent(uint64_t limit, RawEvent* event, StatsWanted wanted);
  bool ReadEventMetadataEntry(uint64_t limit);
  // While the plane's name is unknown (it may come last) it may be either.
  bool MayBeDevice() const { return !plane_name_known_ || IsDevicePlane(plane_name_); }
  bool MayBeHost() const { return !plane_name_known_ || plane_name_ == kHostPlane; }
  bool FinishLine(const PendingLine& line, int64_t timestamp_ns);
  // Fails the read when the names or events went past the trace limits.
  bool CheckLimits(uint64_t offset) {
    if (plane_kept_stats_ > static_cast<uint64_t>(out_->limits.max_trace_stats)) {
      return in_.FailWith(TraceLimitError(in_.source_name(), "stats kept by one XSpace plane",
                                          out_->limits.max_trace_stats, "max_trace_stats", offset));
    }
    if (out_->WithinLimits(&plane_stats_.strings)) return true;
    return in_.FailWith(out_->LimitError(in_.source_name(), offset, &plane_stats_.strings));
  }
  void FinishPlane();

  ProtoReader in_;
  TraceEvents* out_;
  bool base_set_ = false;

  // State of the XPlane message being read.
  std::string plane_name_;
  bool plane_name_known_ = false;
  std::vector<PendingLine> lines_;
  std::vector<RawEvent> events_;
  absl::flat_hash_map<int64_t, NameId> metadata_names_;
  PlaneStats plane_stats_;
  size_t plane_kept_stats_ = 0;  // stat records this plane keeps (--max_trace_stats)
  StatScratch stats_;

  std::map<std::string, PlaneByName> planes_;
  XlaOpCollector ops_;
  XSpaceMemoryCollector memory_;
  std::string scratch_;
  std::string line_name_;
};

absl::Status XSpaceReader::Read() {
  out_->format = TraceFormat::kXSpace;
  out_->ticks_per_ns = 1000;
  int64_t planes = 0;
  while (in_.More(kNoLimit, "XSpace")) {
    uint32_t field;
    int wire;
    if (!in_.ReadTag(&field, &wire, "XSpace")) break;
    if (field == 1 && wire == kLengthDelimited) {
      uint64_t end;
      if (!in_.ReadLength(kNoLimit, &end, "XPlane", "XSpace") || !ReadPlane(end)) break;
      ++planes;
    } else if (field == 4 && wire == kLengthDelimited) {
      uint64_t end;
      if (!in_.ReadLength(kNoLimit, &end, "hostname", "XSpace")) break;
      if (!in_.ReadBytes(end - in_.Offset(), in_.name_cap(), &scratch_, "hostname")) break;
      out_->metadata.emplace("hostname", scratch_);
    } else if (!in_.SkipField(wire, kNoLimit, "XSpace field", "XSpace")) {
      break;
    }
  }
  if (!in_.ok()) return in_.status();
  // Any bytes that happen to decode as protobuf fields are no trace: a profiler's XSpace
  // always holds at least its host plane.
  if (planes == 0) {
    return absl::InvalidArgumentError(absl::StrCat(in_.source_name(), ": no XPlane in it, so not an XSpace trace"));
  }
  for (auto& [name, plane] : planes_) {
    if (plane.has_stream_line) continue;
    out_->activity.append_range(plane.xla_ops);
  }
  out_->xla_ops = ops_.Finish();
  out_->xla_kernel_leaves = ops_.TakeKernelLeaves();
  memory_.Finish(out_, &base_set_);
  return absl::OkStatus();
}

bool XSpaceReader::ReadPlane(uint64_t limit) {
  plane_name_.clear();
  plane_name_known_ = false;
  lines_.clear();
  events_.clear();
  metadata_names_.clear();
  plane_stats_.Clear();
  plane_kept_stats_ = 0;
  while (in_.More(limit, "XPlane")) {
    uint32_t field;
    int wire;
    if (!in_.ReadTag(&field, &wire, "XPlane")) return false;
    uint64_t end;
    if (wire == kLengthDelimited && field >= 2 && field <= 5) {
      if (!in_.ReadLength(limit, &end, "XPlane field", "XPlane")) return false;
      bool ok;
      if (field == 2) {
        ok = in_.ReadBytes(end - in_.Offset(), in_.name_cap(), &plane_name_, "XPlane.name");
        plane_name_known_ = true;
      } else if (field == 3) {
        ok = ReadLine(end);
      } else if (!MayBeDevice() && !MayBeHost()) {
        ok = in_.Skip(end - in_.Offset(), "XPlane metadata");  // never needed
      } else if (field == 4) {
        ok = ReadEventMetadataEntry(end);
      } else {
        ok = ReadStatMetadataEntry(in_, end, &plane_stats_);
        ++plane_kept_stats_;  // a stat_names entry
        ok = ok && CheckLimits(end);
      }
      if (!ok) return false;
    } else if (!in_.SkipField(wire, limit, "XPlane field", "XPlane")) {
      return false;
    }
  }
  if (!in_.ok()) return false;
  FinishPlane();
  return true;
}

bool XSpaceReader::ReadLine(uint64_t limit) {
  PendingLine line;
  line.first_event = events_.size();
  bool name_known = false;
  int64_t timestamp_ns = 0;
  line_name_.clear();
  ops_.BeginLine();
  memory_.BeginLine();
  while (in_.More(limit, "XLine")) {
    uint32_t field;
    int wire;
    if (!in_.ReadTag(&field, &wire, "XLine")) return false;
    if (field == 2 && wire == kLengthDelimited) {
      uint64_t end;
      if (!in_.ReadLength(limit, &end, "XLine.name", "XLine")) return false;
      if (!in_.ReadBytes(end - in_.Offset(), in_.name_cap(), &line_name_, "XLine.name"))
        return false;
      name_known = true;
      line.kind = ClassifyLine(line_name_);
    } else if (field == 3 && wire == kVarint) {
      if (!ReadLineTimestamp(&timestamp_ns)) return false;
    } else if (field == 4 && wire == kLengthDelimited) {
      if (!ReadLineEvent(limit, line.kind, name_known)) return false;
    } else if (!in_.SkipField(wire, limit, "XLine field", "XLine")) {
      return false;
    }
  }
  if (!in_.ok()) return false;
  memory_.EndLine(timestamp_ns);
  ops_.EndLine(OpsLine(line.kind));
  line.end_event = events_.size();
  if (line.kind == LineKind::kOther) {
    events_.resize(line.first_event);  // the name came after the events
    return true;
  }
  if (!FinishLine(line, timestamp_ns)) return false;
  line.name = out_->names.Intern(line_name_);
  lines_.push_back(line);
  return true;
}

bool XSpaceReader::ReadLineTimestamp(int64_t* timestamp_ns) {
  const uint64_t offset = in_.Offset();
  uint64_t value;
  if (!in_.ReadVarint(&value, "XLine.timestamp_ns")) return false;
  *timestamp_ns = static_cast<int64_t>(value);
  // The trace's clock zero comes from a line timestamp: it must keep TimeNs in range.
  if (*timestamp_ns < -kMaxAbsTicks || *timestamp_ns > kMaxAbsTicks) {
    return in_.FailWith(out_->TimeRangeError(
        in_.source_name(), offset, absl::StrCat("XLine.timestamp_ns ", *timestamp_ns)));
  }
  return true;
}

bool XSpaceReader::ReadLineEvent(uint64_t limit, LineKind kind, bool name_known) {
  ++out_->events;
  const uint64_t event_offset = in_.Offset();
  if (!CheckLimits(event_offset)) return false;
  uint64_t end;
  if (!in_.ReadLength(limit, &end, "XEvent", "XLine")) return false;
  const bool activity = !name_known || kind != LineKind::kOther;
  const bool ops = MayBeDevice() && (!name_known || kind == LineKind::kStream ||
                                     kind == LineKind::kXlaOps);
  const bool host = MayBeHost();
  if (!activity && !host) return in_.Skip(end - in_.Offset(), "XEvent");  // nothing to learn
  RawEvent event;
  event.offset = event_offset;
  stats_.Clear();
  StatsWanted wanted = StatsWanted::kNone;
  if (ops) {
    wanted = StatsWanted::kAll;
  } else if (host) {
    wanted = MayBeDevice() ? StatsWanted::kInstants : StatsWanted::kOnlyInstants;
  }
  if (!ReadEvent(end, &event, wanted)) return false;
  if (activity) events_.push_back(event);
  if (ops && event.dur_ps >= 0) {
    plane_kept_stats_ +=
        ops_.AddEvent(name_known ? OpsLine(kind) : XlaOpCollector::Line::kUnknown,
                      event.metadata_id, event.dur_ps, stats_, &plane_stats_);
  }
  if (host && event.dur_ps == 0) {
    plane_kept_stats_ +=
        memory_.AddCandidate(event.metadata_id, event.start, stats_, &plane_stats_);
  }
  return CheckLimits(event_offset);  // names the stats just added
}

bool XSpaceReader::ReadEvent(uint64_t limit, RawEvent* event, StatsWanted wanted) {
  int64_t stats = 0;
  while (in_.More(limit, "XEvent")) {
    uint32_t field;
    int wire;
    if (!in_.ReadTag(&field, &wire, "XEvent")) return false;
    if (wire == kVarint && field >= 1 && field <= 3) {
      uint64_t value;
      if (!in_.ReadVarint(&value, "XEvent field")) return false;
      int64_t v = static_cast<int64_t>(value);
      if (field == 1)
        event->metadata_id = v;
      else if (field == 2)
        event->start = v;
      else
        event->dur_ps = v;
      if (field == 3 && v != 0 && wanted == StatsWanted::kOnlyInstants) {
        return in_.Skip(limit - in_.Offset(), "XEvent");
      }
    } else if (field == 4 && ++stats > out_->limits.max_event_stats) {
      return in_.FailWith(TraceLimitError(in_.source_name(), "stats on one event",
                                          out_->limits.max_event_stats, "max_event_stats",
                                          event->offset));
    } else if (field == 4 && wire == kLengthDelimited &&
               (wanted == StatsWanted::kAll ||
                (wanted != StatsWanted::kNone && event->dur_ps == 0))) {
      uint64_t end;
      if (!in_.ReadLength(limit, &end, "XStat", "XEvent") || !ReadXStat(in_, end, &stats_)) {
        return false;
      }
    } else if (!in_.SkipField(wire, limit, "XEvent field", "XEvent")) {  // occurrences
      return false;
    }
  }
  return in_.ok();
}

// Turns the line's raw offsets into ticks: ps relative to the first activity line's
// timestamp, which keeps epoch-based timestamps (1.7e18 ns = 1.7e21 ps) inside int64. An
// event outside ±kMaxAbsTicks fails the read; one with a negative duration is skipped.
bool XSpaceReader::FinishLine(const PendingLine& line, int64_t timestamp_ns) {
  if (!base_set_) {
    out_->base_ns = timestamp_ns;
    base_set_ = true;
  }
  const __int128 line_start = (static_cast<__int128>(timestamp_ns) - out_->base_ns) * 1000;
  for (size_t i = line.first_event; i < line.end_event; ++i) {
    RawEvent& e = events_[i];
    if (e.dur_ps < 0) {
      e.valid = false;
      continue;
    }
    const __int128 start = line_start + e.start;
    if (start < -kMaxAbsTicks || start > kMaxAbsTicks || start + e.dur_ps > kMaxAbsTicks) {
      return in_.FailWith(out_->TimeRangeError(
          in_.source_name(), e.offset,
          absl::StrCat("line timestamp ", timestamp_ns, " ns, offset ", e.start, " ps, duration ",
                       e.dur_ps, " ps")));
    }
    e.start = static_cast<int64_t>(start);
  }
  return true;
}

bool XSpaceReader::ReadEventMetadataEntry(uint64_t limit) {
  int64_t id = 0;
  // Stats only for device planes: where XLA puts per-op facts (hlo_op, flops, …).
  if (!ReadEventMetadataEntryFields(in_, limit, &id, &scratch_, MayBeDevice() ? &stats_ : nullptr,
                                    out_->limits.max_event_stats)) {
    return false;
  }
  ++plane_kept_stats_;  // the entry's own records (name, allocator id)
  if (!CheckLimits(in_.Offset())) return false;
  if (MayBeHost()) memory_.NoteEventName(id, scratch_);
  if (MayBeDevice()) {
    // Host planes have thousands of names that only the allocator check above needs.
    metadata_names_[id] = out_->names.Intern(scratch_);
    std::vector<RawStat>& stats = plane_stats_.metadata_stats[id];
    stats.clear();
    plane_stats_.InternTexts(stats_, &stats);
    plane_kept_stats_ += stats.size();
    if (stats.empty()) plane_stats_.metadata_stats.erase(id);
  }
  return CheckLimits(in_.Offset());
}

void XSpaceReader::FinishPlane() {
  bool has_stream_line = false;
  for (const PendingLine& line : lines_) has_stream_line |= line.kind == LineKind::kStream;
  ops_.FinishPlane(plane_name_, IsDevicePlane(plane_name_), has_stream_line, plane_stats_,
                   [this](int64_t id) -> std::string_view {
                     auto it = metadata_names_.find(id);
                     return it == metadata_names_.end() ? "" : out_->names.Get(it->second);
                   });
  memory_.FinishPlane(plane_name_ == kHostPlane, plane_stats_, &out_->names);
  plane_stats_.Clear();
  if (!IsDevicePlane(plane_name_) || lines_.empty()) return;
  PlaneByName& plane = planes_[plane_name_];
  const NameId device = out_->names.Intern(plane_name_);
  const NameId unnamed = out_->names.Intern("");
  for (const PendingLine& line : lines_) {
    if (line.kind == LineKind::kStream) plane.has_stream_line = true;
    for (size_t i = line.first_event; i < line.end_event; ++i) {
      const RawEvent& e = events_[i];
      if (!e.valid) {
        ++out_->skipped_events;
        continue;
      }
      auto it = metadata_names_.find(e.metadata_id);
      NameId name = it == metadata_names_.end() ? unnamed : it->second;
      std::string_view text = out_->names.Get(name);
      if (line.kind == LineKind::kSteps) {
        int64_t step;
        if (ParseJsonInt64(text, &step)) out_->steps.push_back(StepEvent{step, e.start, e.dur_ps});
        continue;
      }
      DeviceActivity a;
      a.start = e.start;
      a.dur = e.dur_ps;
      a.name = name;
      a.device = device;
      a.stream = line.name;
      a.category = unnamed;
      if (line.kind == LineKind::kStream) {
        a.kind = StreamEventKind(text);
        out_->activity.push_back(a);
      } else {
        a.kind = XlaOpKind(text);
        plane.xla_ops.push_back(a);
      }
    }
  }
}

}  // namespace

absl::Status ReadXSpace(ByteSource& source, TraceEvents* out) {
  XSpaceReader reader(source, out);
  return reader.Read();
}

}  // namespace fleetprof::analysis
