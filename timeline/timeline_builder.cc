#include "timeline/timeline_builder.h"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "fleetprof/v1/records.pb.h"
#include "timeline/block_codec.h"
#include "timeline/levels.h"

namespace fleetprof::timeline {
namespace {

using analysis::NameId;
using analysis::TraceEvents;

enum class Source : uint8_t { kDevice, kHost, kCounter };

constexpr size_t kNameChunkBytes = 1 << 20;
constexpr std::string_view kCounterSampleName = "allocated_bytes";

struct TrackKey {
  Source source;
  std::string group;
  std::string lane;
  bool operator<(const TrackKey& o) const {
    return std::tie(source, group, lane) < std::tie(o.source, o.group, o.lane);
  }
};

struct PendingTrack {
  size_t count = 0;              // how many events the track has (Collect's first pass)
  std::vector<uint32_t> events;  // indices into the source's vector
};

const char* KindName(Source s) {
  switch (s) {
    case Source::kDevice:
      return "device";
    case Source::kHost:
      return "host";
    case Source::kCounter:
      return "counter";
  }
  return "host";
}

class Builder {
 public:
  Builder(const TraceEvents& events, TimelineWriter& writer) : in_(events), writer_(writer) {}

  absl::Status Run() {
    v1::TimelineDirectory directory;
    directory.set_format(analysis::TraceFormatName(in_.format));
    directory.set_base_ns(in_.base_ns);
    directory.set_ticks_per_ns(in_.ticks_per_ns);
    uint32_t index = 0;
    // One kind of track at a time, in the directory's order (TrackKey sorts by source first):
    // the indices held at once are those of one kind's events, not of all of them.
    for (const Source source : {Source::kDevice, Source::kHost, Source::kCounter}) {
      Collect(source);
      for (auto& [key, pending] : tracks_) {
        v1::TimelineTrack* track = directory.add_tracks();
        Describe(key, track);
        if (absl::Status s = WriteTrack(key.source, index, pending, track); !s.ok()) return s;
        directory.set_events(directory.events() + track->events());
        pending.events = {};  // release as we go
        ++index;
      }
      tracks_.clear();
    }
    absl::StatusOr<uint32_t> chunks = WriteNames();
    if (!chunks.ok()) return chunks.status();
    directory.set_name_chunks(*chunks);
    return writer_.PutDirectory(directory.SerializeAsString());
  }

 private:
  // Groups the events of `source` by (name id, name id) first, then names each track once. Two
  // passes: the first counts each track's events, so the second fills indices reserved to
  // their exact size (grown one by one, they held up to twice that, and three times while growing).
  void Collect(Source source) {
    absl::flat_hash_map<std::pair<NameId, NameId>, PendingTrack> by_ids;
    for (const bool fill : {false, true}) {
      std::pair<NameId, NameId> last_key;
      PendingTrack* last = nullptr;
      auto add = [&](NameId a, NameId b, uint32_t index) {
        const std::pair<NameId, NameId> key(a, b);
        if (last == nullptr || key != last_key) {  // consecutive events mostly share a track
          last_key = key;
          last = &by_ids[key];  // inserts only while counting; the pointer lives until the next key
          if (fill && last->events.capacity() < last->count) last->events.reserve(last->count);
        }
        if (fill) {
          last->events.push_back(index);
        } else {
          ++last->count;
        }
      };
      switch (source) {
        case Source::kDevice:
          for (uint32_t i = 0; i < in_.activity.size(); ++i) add(in_.activity[i].device, in_.activity[i].stream, i);
          break;
        case Source::kHost:
          for (uint32_t i = 0; i < in_.host.size(); ++i) add(in_.host[i].thread, 0, i);
          break;
        case Source::kCounter:
          for (uint32_t i = 0; i < in_.memory.size(); ++i) add(in_.memory[i].device, 0, i);
          break;
      }
    }
    for (auto& [ids, pending] : by_ids) {
      const auto [a, b] = ids;
      TrackKey key{source, std::string(in_.names.Get(a)), ""};
      if (source == Source::kDevice) {
        key.lane = std::string(in_.names.Get(b));
      } else if (source == Source::kHost) {
        size_t cut = key.group.find('\x1f');
        if (cut != std::string::npos) {
          key.lane = key.group.substr(cut + 1);
          key.group.resize(cut);
        }
      }
      tracks_[std::move(key)] = std::move(pending);
    }
  }

  static void Describe(const TrackKey& key, v1::TimelineTrack* track) {
    track->set_kind(KindName(key.source));
    track->set_group(key.group);
    track->set_lane(key.lane);
    switch (key.source) {
      case Source::kDevice:
        track->set_id(absl::StrCat("device:", key.group, "/", key.lane));
        track->set_name(key.lane.empty() ? key.group : key.lane);
        break;
      case Source::kHost:
        track->set_id(absl::StrCat("host:", key.group, "/", key.lane));
        track->set_name(key.lane.empty() ? key.group : absl::StrCat("thread ", key.lane));
        break;
      case Source::kCounter:
        track->set_id(absl::StrCat("counter:memory/", key.group));
        track->set_name(absl::StrCat("memory ", key.group));
        break;
    }
  }

  TimelineEvent Event(Source source, uint32_t i) const {
    TimelineEvent e;
    if (source == Source::kDevice) {
      const analysis::DeviceActivity& a = in_.activity[i];
      e.start = a.start;
      e.dur = a.dur;
      e.name = a.name;
      e.category = a.category;
      e.kind = static_cast<uint8_t>(a.kind);
      e.correlation = a.correlation;
      if (a.has_correlation) e.flags |= TimelineEvent::kHasCorrelation;
      auto sized = std::lower_bound(in_.message_bytes.begin(), in_.message_bytes.end(), std::make_pair(i, int64_t{0}),
                                    [](const auto& x, const auto& y) { return x.first < y.first; });
      if (sized != in_.message_bytes.end() && sized->first == i) {
        e.bytes = sized->second;
        e.flags |= TimelineEvent::kHasBytes;
      }
    } else if (source == Source::kHost) {
      const analysis::HostEvent& h = in_.host[i];
      e.start = h.start;
      e.dur = h.dur;
      e.name = h.name;
      e.category = h.category;
      e.correlation = h.correlation;
      if (h.has_correlation) e.flags |= TimelineEvent::kHasCorrelation;
    } else {
      const analysis::MemoryEvent& m = in_.memory[i];
      e.start = m.ts;
      e.name = allocated_name_;
      e.category = m.device;
      e.bytes = m.bytes;
      if (m.is_total) e.flags |= TimelineEvent::kIsTotal;
    }
    return e;
  }

  // A track's events in the order they are written: its counter samples, or indices into
  // the source's vector.
  struct OrderedEvents {
    Source source;
    const std::vector<uint32_t>& order;
    const std::vector<TimelineEvent>& samples;  // counters only
    bool counter() const { return source == Source::kCounter; }
    size_t size() const { return counter() ? samples.size() : order.size(); }
  };

  // Sorts the track's events, then writes them level by level. Memory beyond the events
  // themselves: the 4-byte index, its sort buffer and a 1-byte level per event; events are
  // made into TimelineEvents one block at a time. Counter samples (few) are copied, since
  // each one's value and duration depend on its neighbours.
  absl::Status WriteTrack(Source source, uint32_t index, PendingTrack& pending, v1::TimelineTrack* track) {
    std::vector<uint32_t>& order = pending.events;
    std::vector<TimelineEvent> samples;
    if (source == Source::kCounter) {
      samples = CounterSamples(order);
    } else {
      SortByStart(source, order);
    }
    const OrderedEvents events{source, order, samples};
    std::vector<uint32_t> per_level(kLevels, 0);
    const std::vector<uint8_t> level_of = LevelOfEach(events, &per_level);
    std::vector<TimelineEvent> block;
    block.reserve(kBlockEvents);
    std::string bytes;
    for (uint32_t level = 0; level < kLevels; ++level) {
      if (per_level[level] == 0) continue;
      v1::TimelineLevel* out = track->add_levels();
      out->set_level(level);
      if (absl::Status s = WriteLevel(events, level_of, index, level, out, block, bytes); !s.ok()) return s;
    }
    track->set_events(static_cast<int64_t>(events.size()));
    order = {};
    return absl::OkStatus();
  }

  // The memory samples of `order` by time, each with the total it brings the device to.
  // Sorts `order` by time.
  std::vector<TimelineEvent> CounterSamples(std::vector<uint32_t>& order) const {
    std::stable_sort(order.begin(), order.end(),
                     [&](uint32_t a, uint32_t b) { return in_.memory[a].ts < in_.memory[b].ts; });
    std::vector<TimelineEvent> samples;
    samples.reserve(order.size());
    int64_t total = 0;
    for (size_t k = 0; k < order.size(); ++k) {
      TimelineEvent e = Event(Source::kCounter, order[k]);
      total = (e.flags & TimelineEvent::kIsTotal) ? e.bytes : total + e.bytes;
      e.value = total;
      samples.push_back(e);
    }
    // A sample holds its value until the next one: that is its duration.
    for (size_t k = 0; k + 1 < samples.size(); ++k) samples[k].dur = samples[k + 1].start - samples[k].start;
    std::stable_sort(samples.begin(), samples.end(), [](const TimelineEvent& a, const TimelineEvent& b) {
      return a.start < b.start || (a.start == b.start && a.dur > b.dur);
    });
    return samples;
  }

  // Start order; at equal starts the longer first (the enclosing event), then file order:
  // the order the op breakdown walks a thread in, so an export reads back the same.
  void SortByStart(Source source, std::vector<uint32_t>& order) const {
    auto start_dur = [&](uint32_t i) {
      if (source == Source::kDevice) return std::pair(in_.activity[i].start, in_.activity[i].dur);
      return std::pair(in_.host[i].start, in_.host[i].dur);
    };
    // `order` is in file order, so the index breaks the last ties as a stable sort would,
    // without a buffer as large as the track's index.
    std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      auto [as, ad] = start_dur(a);
      auto [bs, bd] = start_dur(b);
      if (as != bs) return as < bs;
      if (ad != bd) return ad > bd;
      return a < b;
    });
  }

  TimelineEvent EventAt(const OrderedEvents& events, size_t k) const {
    return events.counter() ? events.samples[k] : Event(events.source, events.order[k]);
  }

  // The level of each event by its duration, and how many each level holds.
  std::vector<uint8_t> LevelOfEach(const OrderedEvents& events, std::vector<uint32_t>* per_level) const {
    const size_t n = events.size();
    std::vector<uint8_t> level_of(n);
    for (size_t k = 0; k < n; ++k) {
      const analysis::Ticks dur =
          events.counter() ? events.samples[k].dur
                           : (events.source == Source::kDevice ? in_.activity[events.order[k]].dur
                                                               : in_.host[events.order[k]].dur);
      level_of[k] = static_cast<uint8_t>(LevelOfDuration(in_.DurationNs(dur)));
      ++(*per_level)[level_of[k]];
    }
    return level_of;
  }

  // Writes the events of one level in blocks of kBlockEvents. `block` and `bytes` are buffers
  // kept from level to level.
  absl::Status WriteLevel(const OrderedEvents& events, const std::vector<uint8_t>& level_of, uint32_t index,
                          uint32_t level, v1::TimelineLevel* out, std::vector<TimelineEvent>& block,
                          std::string& bytes) {
    uint32_t block_index = 0;
    for (size_t k = 0; k < events.size(); ++k) {
      if (level_of[k] != level) continue;
      block.push_back(EventAt(events, k));
      if (block.size() == kBlockEvents) {
        if (absl::Status s = PutBlock(index, level, block_index, events.counter(), out, block, bytes); !s.ok()) {
          return s;
        }
      }
    }
    return PutBlock(index, level, block_index, events.counter(), out, block, bytes);
  }

  // Writes `block` (if any) as the level's next block and describes it in `out`; empties
  // `block` and counts it in `block_index`.
  absl::Status PutBlock(uint32_t index, uint32_t level, uint32_t& block_index, bool counter, v1::TimelineLevel* out,
                        std::vector<TimelineEvent>& block, std::string& bytes) {
    if (block.empty()) return absl::OkStatus();
    v1::TimelineBlock* meta = out->add_blocks();
    meta->set_first_start(block.front().start);
    meta->set_last_start(block.back().start);
    int64_t max_end = block.front().start;
    int64_t max_value = block.front().value;
    for (const TimelineEvent& e : block) {
      max_end = std::max(max_end, e.start + e.dur);
      max_value = std::max(max_value, e.value);
      out->set_max_dur(std::max(out->max_dur(), e.dur));
    }
    meta->set_max_end(max_end);
    meta->set_count(static_cast<uint32_t>(block.size()));
    if (counter) meta->set_max_value(max_value);
    bytes.clear();
    EncodeBlock(block, counter, &bytes);
    block.clear();
    return writer_.PutBlock(index, level, block_index++, std::move(bytes));
  }

  absl::StatusOr<uint32_t> WriteNames() {
    uint32_t chunk = 0;
    v1::TimelineNames names;
    size_t bytes = 0;
    auto flush = [&]() -> absl::Status {
      absl::Status s = writer_.PutNames(chunk++, names.SerializeAsString());
      names.Clear();
      bytes = 0;
      return s;
    };
    for (size_t i = 0; i < in_.names.size(); ++i) {
      std::string_view name = in_.names.Get(static_cast<NameId>(i));
      if (bytes > 0 && bytes + name.size() > kNameChunkBytes) {
        if (absl::Status s = flush(); !s.ok()) return s;
      }
      names.add_names(std::string(name));
      bytes += name.size() + 4;
    }
    names.add_names(std::string(kCounterSampleName));
    if (absl::Status s = flush(); !s.ok()) return s;
    return chunk;
  }

  const TraceEvents& in_;
  TimelineWriter& writer_;
  std::map<TrackKey, PendingTrack> tracks_;  // ordered: devices, hosts, counters, by name
  // Counter samples are named by what they count: one name after the trace's own.
  const NameId allocated_name_ = static_cast<NameId>(in_.names.size());
};

}  // namespace

absl::Status WriteTimeline(const TraceEvents& events, TimelineWriter& writer) {
  Builder builder(events, writer);
  return builder.Run();
}

}  // namespace fleetprof::timeline
