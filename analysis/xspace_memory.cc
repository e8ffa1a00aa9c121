#include "analysis/xspace_memory.h"

#include <limits>

namespace fleetprof::analysis {
namespace {

// Writes `v` at `p` (at most 10 bytes) and returns the end.
char* PutVarint(char* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}

// The arena is written by this file only, so reading it needs no bounds errors.
uint64_t GetVarint(const std::string& in, size_t* pos) {
  uint64_t v = 0;
  for (int shift = 0;; shift += 7) {
    uint8_t b = static_cast<uint8_t>(in[(*pos)++]);
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (b < 0x80) return v;
  }
}

// Zigzag keeps small negative ids and values short.
uint64_t Zig(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
int64_t Zag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

}  // namespace

void XSpaceMemoryCollector::NoteEventName(int64_t metadata_id, std::string_view name) {
  if (name == "MemoryAllocation" || name == "MemoryDeallocation") memory_ids_.insert(metadata_id);
}

size_t XSpaceMemoryCollector::AddCandidate(int64_t metadata_id, int64_t offset_ps,
                                           const StatScratch& stats, PlaneStats* plane) {
  if (!stats.HasInteger()) return 0;
  candidates_.push_back(Candidate{metadata_id, 0, offset_ps, arena_.size()});
  for (const RawStat& s : stats.stats) {
    // Bytes are integers; the device is text or an integer. Doubles are never needed.
    if (s.kind == StatKind::kDouble) continue;
    int64_t value = s.value;
    if (s.kind == StatKind::kString) {
      value = plane->strings.Intern(stats.texts[static_cast<size_t>(s.value)]);
    }
    char buf[21];  // two varints and the kind
    char* end = PutVarint(buf, Zig(s.id));
    *end++ = static_cast<char>(s.kind);
    end = PutVarint(end, Zig(value));
    arena_.append(buf, end);
  }
  return stats.stats.size();
}

void XSpaceMemoryCollector::EndLine(int64_t timestamp_ns) {
  for (size_t i = line_first_; i < candidates_.size(); ++i)
    candidates_[i].line_ts_ns = timestamp_ns;
  line_first_ = candidates_.size();
}

void XSpaceMemoryCollector::FinishPlane(bool host_plane, const PlaneStats& plane,
                                        NameTable* names) {
  // The ids of the stats that matter, found once: a sample then compares ids, not names.
  enum Wanted { kBytes, kMemoryId, kAllocator, kPeak, kCount };
  std::vector<int64_t> ids[kCount];
  for (const auto& [id, name] : plane.stat_names) {
    std::string_view n = plane.strings.Get(name);
    if (n == "bytes_allocated") ids[kBytes].push_back(id);
    if (n == "memory_id") ids[kMemoryId].push_back(id);
    if (n == "allocator_name") ids[kAllocator].push_back(id);
    if (n == "peak_bytes_in_use") ids[kPeak].push_back(id);
  }
  auto find = [&](Wanted w) -> const RawStat* {
    for (const RawStat& s : decoded_) {
      for (int64_t id : ids[w]) {
        if (s.id == id) return &s;
      }
    }
    return nullptr;
  };
  for (size_t i = 0; host_plane && !ids[kBytes].empty() && i < candidates_.size(); ++i) {
    const Candidate& c = candidates_[i];
    if (memory_ids_.count(c.metadata_id) == 0) continue;
    size_t pos = c.stats_begin;
    const size_t end = i + 1 < candidates_.size() ? candidates_[i + 1].stats_begin : arena_.size();
    decoded_.clear();
    while (pos < end) {
      RawStat s;
      s.id = Zag(GetVarint(arena_, &pos));
      s.kind = static_cast<StatKind>(arena_[pos++]);
      s.value = Zag(GetVarint(arena_, &pos));
      decoded_.push_back(s);
    }
    const RawStat* bytes = find(kBytes);
    if (bytes == nullptr || !bytes->IsInteger()) continue;
    const RawStat* device = find(kMemoryId);
    if (device == nullptr) device = find(kAllocator);
    std::string name = device != nullptr ? plane.Text(*device) : "host";
    StatSum value;
    value.Add(*bytes);
    samples_.push_back(
        Sample{c.line_ts_ns, c.offset_ps, ClampToInt64(value.Exact()), names->Intern(name)});
    if (const RawStat* peak = find(kPeak); peak != nullptr && peak->IsInteger()) {
      StatSum p;
      p.Add(*peak);
      int64_t& best = peaks_[name];
      best = std::max(best, ClampToInt64(p.Exact()));
    }
  }
  memory_ids_.clear();
  candidates_.clear();
  arena_.clear();
  line_first_ = 0;
}

void XSpaceMemoryCollector::Finish(TraceEvents* out, bool* base_set) {
  if (!samples_.empty() && !*base_set) {
    out->base_ns = samples_.front().line_ts_ns;
    *base_set = true;
  }
  for (const Sample& s : samples_) {
    __int128 ticks = (static_cast<__int128>(s.line_ts_ns) - out->base_ns) * 1000 + s.offset_ps;
    if (ticks < -kMaxAbsTicks || ticks > kMaxAbsTicks) {
      ++out->skipped_events;
      continue;
    }
    out->memory.push_back(MemoryEvent{static_cast<int64_t>(ticks), s.bytes, s.device, true});
  }
  for (const auto& [device, peak] : peaks_) {
    int64_t& best = out->allocator_peak_bytes[device];
    best = std::max(best, peak);
  }
  samples_.clear();
  peaks_.clear();
}

}  // namespace fleetprof::analysis
