#include "timeline/timeline.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "common/utf8.h"

namespace fleetprof::timeline {

absl::StatusOr<std::shared_ptr<const Timeline>> Timeline::Load(TimelineReader& reader) {
  absl::StatusOr<std::string> bytes = reader.GetDirectory();
  if (!bytes.ok()) return bytes.status();
  std::shared_ptr<Timeline> t(new Timeline());
  if (!t->directory_.ParseFromString(*bytes) || t->directory_.ticks_per_ns() < 1) {
    return absl::DataLossError("damaged timeline directory");
  }
  t->base_ns_ = t->directory_.base_ns();
  t->ticks_per_ns_ = t->directory_.ticks_per_ns();
  t->memory_bytes_ = bytes->size() * 2;
  for (uint32_t chunk = 0; chunk < t->directory_.name_chunks(); ++chunk) {
    absl::StatusOr<std::string> names_bytes = reader.GetNames(chunk);
    if (!names_bytes.ok()) return names_bytes.status();
    v1::TimelineNames names;
    if (!names.ParseFromString(*names_bytes)) return absl::DataLossError("damaged timeline names");
    for (std::string& name : *names.mutable_names()) {
      // Stored as the trace had them (bytes); every answer built from them is UTF-8.
      MakeValidUtf8(&name);
      t->memory_bytes_ += name.size() + sizeof(std::string);
      t->names_.push_back(std::move(name));
    }
  }
  int64_t start = std::numeric_limits<int64_t>::max();
  int64_t end = std::numeric_limits<int64_t>::min();
  t->runs_.resize(static_cast<size_t>(t->directory_.tracks_size()));
  for (int i = 0; i < t->directory_.tracks_size(); ++i) {
    v1::TimelineTrack& stored = *t->directory_.mutable_tracks(i);
    for (std::string* text : {stored.mutable_id(), stored.mutable_name(), stored.mutable_group(), stored.mutable_lane()}) {
      MakeValidUtf8(text);
    }
    const v1::TimelineTrack& track = stored;
    t->track_by_id_.emplace(track.id(), i);
    for (const v1::TimelineLevel& level : track.levels()) {
      // Runs of 1, 4, 16, … blocks: the last run of a layer may hold fewer.
      std::vector<std::vector<Extent>> layers(1);
      for (const v1::TimelineBlock& block : level.blocks()) {
        layers[0].push_back(Extent{t->TimeNs(block.first_start()), t->TimeNs(block.max_end()), block.count(),
                                   block.max_value()});
      }
      while (layers.back().size() > 1) {
        const std::vector<Extent>& below = layers.back();
        std::vector<Extent> above;
        for (size_t j = 0; j < below.size(); j += 4) {
          Extent run = below[j];
          for (size_t k = j + 1; k < std::min(below.size(), j + 4); ++k) {
            // Blocks of a level are in start order: each part starts at or after the one before.
            run.max_gap_ns = std::max({run.max_gap_ns, below[k].start_ns - run.end_ns, below[k].max_gap_ns});
            run.end_ns = std::max(run.end_ns, below[k].end_ns);
            run.count += below[k].count;
            run.max_value = std::max(run.max_value, below[k].max_value);
          }
          above.push_back(run);
        }
        layers.push_back(std::move(above));
      }
      for (const auto& layer : layers) t->memory_bytes_ += layer.size() * sizeof(Extent);
      t->runs_[static_cast<size_t>(i)].push_back(std::move(layers));
      for (const v1::TimelineBlock& block : level.blocks()) {
        start = std::min(start, t->TimeNs(block.first_start()));
        // The last instant must fall inside [start, end): end is one past it.
        end = std::max({end, t->TimeNs(block.max_end()), t->TimeNs(block.last_start()) + 1});
      }
    }
  }
  if (start <= end) {
    t->start_ns_ = start;
    t->end_ns_ = end;
  }
  return std::shared_ptr<const Timeline>(std::move(t));
}

int Timeline::FindTrack(std::string_view id) const {
  auto it = track_by_id_.find(std::string(id));
  return it == track_by_id_.end() ? -1 : it->second;
}

int64_t Timeline::TicksAtOrAfter(int64_t ns) const {
  __int128 t = (static_cast<__int128>(ns) - base_ns_) * ticks_per_ns_;
  t = std::clamp<__int128>(t, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
  return static_cast<int64_t>(t);
}

absl::Status Timeline::ReadBlock(TimelineReader& reader, uint32_t track, int level_index, uint32_t block,
                                 std::vector<TimelineEvent>* events, int64_t stop_start) const {
  const v1::TimelineTrack& t = directory_.tracks(static_cast<int>(track));
  const v1::TimelineLevel& level = t.levels(level_index);
  absl::StatusOr<std::string> bytes = reader.GetBlock(track, level.level(), block);
  if (!bytes.ok()) {
    return absl::DataLossError(absl::StrCat("event block ", t.id(), "/", level.level(), "/", block,
                                            " is missing: ", bytes.status().message()));
  }
  uint64_t declared = 0;
  absl::Status s = DecodeBlock(*bytes, t.kind() == "counter", names(), events, stop_start, &declared);
  if (s.ok() && declared != level.blocks(static_cast<int>(block)).count()) {
    s = absl::DataLossError("event block count disagrees with the directory");
  }
  return s;
}

}  // namespace fleetprof::timeline
