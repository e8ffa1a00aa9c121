#include "diagnosis/profile_facts.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "analysis/kineto_event.h"

namespace fleetprof::diagnosis {

absl::StatusOr<ProfileFacts> ReadProfileFacts(std::string profile_id, v1::ProfileSummary summary,
                                              std::shared_ptr<const timeline::Timeline> timeline,
                                              timeline::TimelineReader& reader, int64_t max_events) {
  ProfileFacts facts;
  facts.profile_id = std::move(profile_id);
  facts.summary = std::move(summary);
  facts.timeline = std::move(timeline);
  const timeline::Timeline& t = *facts.timeline;

  // Runtime categories by name id, decided once per distinct name.
  std::vector<int8_t> runtime(t.names(), -1);
  auto is_runtime = [&](uint32_t category) {
    if (runtime[category] < 0) runtime[category] = analysis::IsRuntimeCategory(t.name(category)) ? 1 : 0;
    return runtime[category] == 1;
  };
  absl::flat_hash_map<std::string, uint32_t> device_index;
  int64_t read = 0;
  std::vector<timeline::TimelineEvent> block;
  for (uint32_t track = 0; track < t.tracks(); ++track) {
    const v1::TimelineTrack& tr = t.track(track);
    const bool device = tr.kind() == "device";
    if (!device && tr.kind() != "host") continue;
    uint32_t device_id = 0;
    if (device) {
      auto [it, added] = device_index.try_emplace(tr.group(), static_cast<uint32_t>(facts.devices.size()));
      if (added) facts.devices.push_back(tr.group());
      device_id = it->second;
    }
    for (int level = 0; level < tr.levels_size(); ++level) {
      for (int b = 0; b < tr.levels(level).blocks_size(); ++b) {
        if (read >= max_events) {
          facts.truncated = true;
          break;
        }
        if (absl::Status s = t.ReadBlock(reader, track, level, static_cast<uint32_t>(b), &block); !s.ok()) return s;
        read += static_cast<int64_t>(block.size());
        for (const timeline::TimelineEvent& e : block) {
          const int64_t start = t.TimeNs(e.start);
          const int64_t dur = t.DurationNs(e.dur);
          if (device) {
            facts.device_ops.push_back(DeviceOp{start, dur, e.correlation, e.name, track, device_id, e.kind,
                                                e.has_correlation()});
          } else {
            facts.host_ops.push_back(
                HostOp{start, dur, e.correlation, e.name, track, is_runtime(e.category), e.has_correlation()});
          }
        }
      }
    }
  }
  auto by_start = [](const auto& a, const auto& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.dur_ns > b.dur_ns;
  };
  std::sort(facts.device_ops.begin(), facts.device_ops.end(), by_start);
  std::sort(facts.host_ops.begin(), facts.host_ops.end(), by_start);
  return facts;
}

ProfileFacts SummaryOnlyFacts(std::string profile_id, v1::ProfileSummary summary) {
  ProfileFacts facts;
  facts.profile_id = std::move(profile_id);
  facts.summary = std::move(summary);
  return facts;
}

}  // namespace fleetprof::diagnosis
