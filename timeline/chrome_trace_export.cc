#include "timeline/chrome_trace_export.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "analysis/trace_summary.h"
#include "proto/proto_json.h"
#include "timeline/trace_window.h"

namespace fleetprof::timeline {
namespace {

constexpr size_t kChunkBytes = 1 << 20;
// Pids and tids that are not integers in the trace get numbers from here (Perfetto wants
// integers); the names go into process_name / thread_name metadata and args.device.
constexpr int64_t kSyntheticIdBase = 1 << 30;

// Microseconds with all nine digits of ns: exact, and what the Kineto reader parses back.
void AppendMicros(std::string* out, int64_t ns) {
  uint64_t magnitude = ns < 0 ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  if (ns < 0) out->push_back('-');
  absl::StrAppend(out, magnitude / 1000);
  const uint64_t frac = magnitude % 1000;
  if (frac != 0) {
    char digits[4] = {'.', static_cast<char>('0' + frac / 100), static_cast<char>('0' + frac / 10 % 10),
                      static_cast<char>('0' + frac % 10)};
    out->append(digits, 4);
  }
}

// Walks one track's levels in start order (longer first at equal starts), block by block.
class TrackMerge {
 public:
  TrackMerge(const Timeline& t, TimelineReader& reader, uint32_t track, int64_t start, int64_t end)
      : t_(t), reader_(reader), track_(track) {
    const v1::TimelineTrack& tr = t.track(track);
    for (int li = 0; li < tr.levels_size(); ++li) {
      Cursor c;
      c.level = li;
      if (start == 0 && end == 0) {
        c.block = 0;
        c.end_block = static_cast<uint32_t>(tr.levels(li).blocks_size());
      } else {
        std::tie(c.block, c.end_block) = CandidateBlocks(t, tr.levels(li), start, end);
      }
      cursors_.push_back(std::move(c));
    }
  }

  // The next event, or null at the end; the pointer lives until the next call.
  absl::StatusOr<const TimelineEvent*> Next() {
    Cursor* best = nullptr;
    for (Cursor& c : cursors_) {
      if (absl::Status s = Fill(c); !s.ok()) return s;
      if (c.pos >= c.events.size()) continue;
      const TimelineEvent& e = c.events[c.pos];
      if (best == nullptr) {
        best = &c;
        continue;
      }
      const TimelineEvent& b = best->events[best->pos];
      if (e.start < b.start || (e.start == b.start && e.dur > b.dur)) best = &c;
    }
    if (best == nullptr) return nullptr;
    return &best->events[best->pos++];
  }

 private:
  struct Cursor {
    int level = 0;
    uint32_t block = 0;
    uint32_t end_block = 0;
    std::vector<TimelineEvent> events;
    size_t pos = 0;
  };
  absl::Status Fill(Cursor& c) {
    while (c.pos >= c.events.size() && c.block < c.end_block) {
      if (absl::Status s = t_.ReadBlock(reader_, track_, c.level, c.block++, &c.events); !s.ok()) return s;
      c.pos = 0;
    }
    return absl::OkStatus();
  }

  const Timeline& t_;
  TimelineReader& reader_;
  uint32_t track_;
  std::vector<Cursor> cursors_;
};

class Exporter : public analysis::ByteSource {
 public:
  Exporter(std::shared_ptr<const Timeline> t, std::unique_ptr<TimelineReader> reader, int64_t start, int64_t end,
           std::string name)
      : timeline_(std::move(t)), t_(*timeline_), reader_(std::move(reader)), start_(start), end_(end),
        name_(std::move(name)) {
    out_ = "{\"schemaVersion\":1,\"displayTimeUnit\":\"ns\",\"traceEvents\":[";
  }

  absl::StatusOr<size_t> Read(char* buf, size_t n) override {
    while (pos_ >= out_.size()) {
      if (done_) return 0;
      out_.clear();
      pos_ = 0;
      if (absl::Status s = Produce(); !s.ok()) return s;
    }
    const size_t take = std::min(n, out_.size() - pos_);
    std::memcpy(buf, out_.data() + pos_, take);
    pos_ += take;
    return take;
  }
  const std::string& name() const override { return name_; }

 private:
  // Appends about kChunkBytes of JSON to out_, or the rest.
  absl::Status Produce() {
    while (out_.size() < kChunkBytes) {
      if (track_ >= t_.tracks()) {
        absl::StrAppend(&out_, "\n],\"fleetprof\":{\"format\":");
        AppendJsonString(&out_, t_.directory().format());
        absl::StrAppend(&out_, ",\"events\":", written_, "}}\n");
        done_ = true;
        return absl::OkStatus();
      }
      if (!merge_) {
        if (!StartTrack()) {
          ++track_;
          continue;
        }
      }
      absl::StatusOr<const TimelineEvent*> next = merge_->Next();
      if (!next.ok()) return next.status();
      if (*next == nullptr) {
        merge_.reset();
        ++track_;
        continue;
      }
      WriteEvent(**next);
    }
    return absl::OkStatus();
  }

  // A pid or tid as the trace had it when it is an integer, else a stable synthetic one.
  std::string IdFor(const std::string& text, bool* synthetic) {
    int64_t v;
    *synthetic = !absl::SimpleAtoi(text, &v) || absl::StrCat(v) != text;
    if (!*synthetic) return text;
    auto [it, added] = synthetic_.emplace(text, kSyntheticIdBase + static_cast<int64_t>(synthetic_.size()));
    return absl::StrCat(it->second);
  }

  void Separator() {
    if (!first_) out_.push_back(',');
    first_ = false;
    out_.push_back('\n');
  }

  void NameMetadata(const char* what, const std::string& pid, const std::string* tid, const std::string& name) {
    Separator();
    absl::StrAppend(&out_, "{\"ph\":\"M\",\"name\":\"", what, "\",\"pid\":", pid);
    if (tid) absl::StrAppend(&out_, ",\"tid\":", *tid);
    absl::StrAppend(&out_, ",\"args\":{\"name\":");
    AppendJsonString(&out_, name);
    out_.append("}}");
  }

  // False when the track cannot be written (a memory counter of a device with no number).
  bool StartTrack() {
    const v1::TimelineTrack& track = t_.track(track_);
    counter_ = track.kind() == "counter";
    device_ = track.kind() == "device";
    if (counter_) {
      // Kineto's [memory] samples name a device by number (-1: the CPU).
      if (track.group() == "cpu") {
        memory_device_ = -1;
      } else if (!absl::SimpleAtoi(track.group(), &memory_device_)) {
        return false;
      }
    }
    bool pid_synthetic = false, tid_synthetic = false;
    pid_ = counter_ ? IdFor("memory", &pid_synthetic) : IdFor(track.group(), &pid_synthetic);
    tid_ = counter_ ? "0" : IdFor(track.lane(), &tid_synthetic);
    if (pid_synthetic && named_pids_.insert(pid_).second) {
      NameMetadata("process_name", pid_, nullptr, counter_ ? "memory" : track.group());
    }
    if (tid_synthetic) NameMetadata("thread_name", pid_, &tid_, track.lane());
    merge_ = std::make_unique<TrackMerge>(t_, *reader_, track_, start_, end_);
    return true;
  }

  void WriteEvent(const TimelineEvent& e) {
    const v1::TimelineTrack& track = t_.track(track_);
    const int64_t es = t_.TimeNs(e.start);
    const int64_t ed = t_.DurationNs(e.dur);
    if (!(start_ == 0 && end_ == 0) && !Overlaps(es, ed, start_, end_)) return;
    Separator();
    ++written_;
    if (counter_) {
      absl::StrAppend(&out_, "{\"ph\":\"i\",\"s\":\"t\",\"name\":\"[memory]\",\"pid\":", pid_,
                      ",\"tid\":", tid_, ",\"ts\":");
      AppendMicros(&out_, es);
      absl::StrAppend(&out_, ",\"args\":{\"Device Id\":", memory_device_,
                      (e.flags & TimelineEvent::kIsTotal) ? ",\"Total Allocated\":" : ",\"Bytes\":", e.bytes,
                      "}}");
      return;
    }
    out_.append("{\"ph\":\"X\",");
    std::string_view category = t_.name(e.category);
    // XSpace device events have no category; Kineto's name them as device work.
    if (device_ && category.empty()) {
      category = static_cast<analysis::ActivityKind>(e.kind) == analysis::ActivityKind::kMemory ? "gpu_memcpy" : "kernel";
    }
    if (!category.empty()) {
      out_.append("\"cat\":");
      AppendJsonString(&out_, category);
      out_.push_back(',');
    }
    out_.append("\"name\":");
    AppendJsonString(&out_, t_.name(e.name));
    absl::StrAppend(&out_, ",\"pid\":", pid_, ",\"tid\":", tid_, ",\"ts\":");
    AppendMicros(&out_, es);
    out_.append(",\"dur\":");
    AppendMicros(&out_, ed);
    out_.append(",\"args\":{");
    bool arg = false;
    if (device_) {
      out_.append("\"device\":");
      AppendJsonString(&out_, track.group());
      arg = true;
    }
    if (e.has_correlation()) absl::StrAppend(&out_, arg ? "," : "", "\"correlation\":", e.correlation);
    out_.append("}}");
  }

  std::shared_ptr<const Timeline> timeline_;
  const Timeline& t_;
  std::unique_ptr<TimelineReader> reader_;
  int64_t start_, end_;
  std::string name_;
  std::string out_;
  size_t pos_ = 0;
  bool done_ = false;
  bool first_ = true;
  int64_t written_ = 0;
  uint32_t track_ = 0;
  std::unique_ptr<TrackMerge> merge_;
  bool counter_ = false, device_ = false;
  int64_t memory_device_ = 0;
  std::string pid_, tid_;
  absl::flat_hash_map<std::string, int64_t> synthetic_;
  absl::flat_hash_set<std::string> named_pids_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<analysis::ByteSource>> ExportChromeTrace(
    std::shared_ptr<const Timeline> timeline, std::unique_ptr<TimelineReader> reader, int64_t start_ns,
    int64_t end_ns, std::string name) {
  if (!(start_ns == 0 && end_ns == 0) && start_ns >= end_ns) {
    return absl::InvalidArgumentError(absl::StrCat("empty window: start_ns ", start_ns, " >= end_ns ", end_ns));
  }
  return std::unique_ptr<analysis::ByteSource>(
      new Exporter(std::move(timeline), std::move(reader), start_ns, end_ns, std::move(name)));
}

}  // namespace fleetprof::timeline
