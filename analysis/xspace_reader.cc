#include "analysis/xspace_reader.h"

#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "analysis/decimal_time.h"
#include "analysis/kineto_event.h"
#include "analysis/proto_reader.h"

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
  bool valid = true;
};

struct PendingLine {
  LineKind kind = LineKind::kOther;
  size_t first_event = 0;
  size_t end_event = 0;
};

// Facts about all XPlane messages that share one name.
struct PlaneByName {
  bool has_stream_line = false;
  std::vector<DeviceActivity> xla_ops;  // used only if no Stream # line shows up
};

class XSpaceReader {
 public:
  XSpaceReader(ByteSource& source, TraceEvents* out) : in_(source), out_(out) {}

  absl::Status Read();

 private:
  bool ReadPlane(uint64_t limit);
  bool ReadLine(uint64_t limit);
  bool ReadEvent(uint64_t limit, RawEvent* event);
  bool ReadEventMetadataEntry(uint64_t limit);
  bool ReadEventMetadataName(uint64_t limit, int64_t* id, std::string* name);
  void FinishLine(const PendingLine& line, int64_t timestamp_ns);
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

  std::map<std::string, PlaneByName> planes_;
  std::string scratch_;
  std::string line_name_;
};

absl::Status XSpaceReader::Read() {
  out_->format = TraceFormat::kXSpace;
  out_->ticks_per_ns = 1000;
  while (in_.More(kNoLimit, "XSpace")) {
    uint32_t field;
    int wire;
    if (!in_.ReadTag(&field, &wire, "XSpace")) break;
    if (field == 1 && wire == kLengthDelimited) {
      uint64_t end;
      if (!in_.ReadLength(kNoLimit, &end, "XPlane", "XSpace") || !ReadPlane(end)) break;
    } else if (field == 4 && wire == kLengthDelimited) {
      uint64_t end;
      if (!in_.ReadLength(kNoLimit, &end, "hostname", "XSpace")) break;
      if (!in_.ReadBytes(end - in_.Offset(), kMaxNameBytes, &scratch_, "hostname")) break;
      out_->metadata.emplace("hostname", scratch_);
    } else if (!in_.SkipField(wire, kNoLimit, "XSpace field", "XSpace")) {
      break;
    }
  }
  if (!in_.ok()) return in_.status();
  for (auto& [name, plane] : planes_) {
    if (plane.has_stream_line) continue;
    out_->activity.insert(out_->activity.end(), plane.xla_ops.begin(), plane.xla_ops.end());
  }
  return absl::OkStatus();
}

bool XSpaceReader::ReadPlane(uint64_t limit) {
  plane_name_.clear();
  plane_name_known_ = false;
  lines_.clear();
  events_.clear();
  metadata_names_.clear();
  while (in_.More(limit, "XPlane")) {
    uint32_t field;
    int wire;
    if (!in_.ReadTag(&field, &wire, "XPlane")) return false;
    uint64_t end;
    if (wire == kLengthDelimited && (field == 2 || field == 3 || field == 4)) {
      if (!in_.ReadLength(limit, &end, "XPlane field", "XPlane")) return false;
      bool ok;
      if (field == 2) {
        ok = in_.ReadBytes(end - in_.Offset(), kMaxNameBytes, &plane_name_, "XPlane.name");
        plane_name_known_ = true;
      } else if (field == 3) {
        ok = ReadLine(end);
      } else if (plane_name_known_ && !IsDevicePlane(plane_name_)) {
        ok = in_.Skip(end - in_.Offset(), "XPlane.event_metadata");  // names never needed
      } else {
        ok = ReadEventMetadataEntry(end);
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
  while (in_.More(limit, "XLine")) {
    uint32_t field;
    int wire;
    if (!in_.ReadTag(&field, &wire, "XLine")) return false;
    if (field == 2 && wire == kLengthDelimited) {
      uint64_t end;
      if (!in_.ReadLength(limit, &end, "XLine.name", "XLine")) return false;
      if (!in_.ReadBytes(end - in_.Offset(), kMaxNameBytes, &line_name_, "XLine.name"))
        return false;
      name_known = true;
      line.kind = ClassifyLine(line_name_);
    } else if (field == 3 && wire == kVarint) {
      uint64_t value;
      if (!in_.ReadVarint(&value, "XLine.timestamp_ns")) return false;
      timestamp_ns = static_cast<int64_t>(value);
    } else if (field == 4 && wire == kLengthDelimited) {
      ++out_->events;
      uint64_t end;
      if (!in_.ReadLength(limit, &end, "XEvent", "XLine")) return false;
      if (name_known && line.kind == LineKind::kOther) {
        if (!in_.Skip(end - in_.Offset(), "XEvent")) return false;  // not activity
        continue;
      }
      RawEvent event;
      if (!ReadEvent(end, &event)) return false;
      events_.push_back(event);
    } else if (!in_.SkipField(wire, limit, "XLine field", "XLine")) {
      return false;
    }
  }
  if (!in_.ok()) return false;
  line.end_event = events_.size();
  if (line.kind == LineKind::kOther) {
    events_.resize(line.first_event);  // the name came after the events
    return true;
  }
  FinishLine(line, timestamp_ns);
  lines_.push_back(line);
  return true;
}

bool XSpaceReader::ReadEvent(uint64_t limit, RawEvent* event) {
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
    } else if (!in_.SkipField(wire, limit, "XEvent field", "XEvent")) {  // stats, occurrences
      return false;
    }
  }
  return in_.ok();
}

// Turns the line's raw offsets into ticks: ps relative to the first activity line's
// timestamp, which keeps epoch-based timestamps (1.7e18 ns = 1.7e21 ps) inside int64.
void XSpaceReader::FinishLine(const PendingLine& line, int64_t timestamp_ns) {
  if (!base_set_) {
    out_->base_ns = timestamp_ns;
    base_set_ = true;
  }
  const __int128 line_start = (static_cast<__int128>(timestamp_ns) - out_->base_ns) * 1000;
  for (size_t i = line.first_event; i < line.end_event; ++i) {
    RawEvent& e = events_[i];
    __int128 start = line_start + e.start;
    __int128 end = start + e.dur_ps;
    if (e.dur_ps < 0 || start < std::numeric_limits<int64_t>::min() ||
        end > std::numeric_limits<int64_t>::max()) {
      e.valid = false;
      continue;
    }
    e.start = static_cast<int64_t>(start);
  }
}

bool XSpaceReader::ReadEventMetadataEntry(uint64_t limit) {
  int64_t key = 0;
  int64_t value_id = 0;
  bool has_key = false;
  scratch_.clear();
  while (in_.More(limit, "event_metadata entry")) {
    uint32_t field;
    int wire;
    if (!in_.ReadTag(&field, &wire, "event_metadata entry")) return false;
    if (field == 1 && wire == kVarint) {
      uint64_t value;
      if (!in_.ReadVarint(&value, "event_metadata key")) return false;
      key = static_cast<int64_t>(value);
      has_key = true;
    } else if (field == 2 && wire == kLengthDelimited) {
      uint64_t end;
      if (!in_.ReadLength(limit, &end, "XEventMetadata", "event_metadata entry")) return false;
      if (!ReadEventMetadataName(end, &value_id, &scratch_)) return false;
    } else if (!in_.SkipField(wire, limit, "event_metadata field", "event_metadata entry")) {
      return false;
    }
  }
  if (!in_.ok()) return false;
  metadata_names_[has_key ? key : value_id] = out_->names.Intern(scratch_);
  return true;
}

bool XSpaceReader::ReadEventMetadataName(uint64_t limit, int64_t* id, std::string* name) {
  while (in_.More(limit, "XEventMetadata")) {
    uint32_t field;
    int wire;
    if (!in_.ReadTag(&field, &wire, "XEventMetadata")) return false;
    if (field == 1 && wire == kVarint) {
      uint64_t value;
      if (!in_.ReadVarint(&value, "XEventMetadata.id")) return false;
      *id = static_cast<int64_t>(value);
    } else if (field == 2 && wire == kLengthDelimited) {
      uint64_t end;
      if (!in_.ReadLength(limit, &end, "XEventMetadata.name", "XEventMetadata")) return false;
      if (!in_.ReadBytes(end - in_.Offset(), kMaxNameBytes, name, "XEventMetadata.name")) {
        return false;
      }
    } else if (!in_.SkipField(wire, limit, "XEventMetadata field", "XEventMetadata")) {
      return false;
    }
  }
  return in_.ok();
}

void XSpaceReader::FinishPlane() {
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
