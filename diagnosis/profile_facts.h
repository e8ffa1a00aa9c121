#pragma once
// What the diagnosis rules read about one profile: its stored summary and its events as the
// event store holds them (exact ns, names interned by the timeline), so that a finding's
// evidence names the trace viewer's own track ids and opens there.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "fleetprof/v1/profile.pb.h"
#include "fleetprof/v1/regression.pb.h"
#include "timeline/timeline.h"

namespace fleetprof::diagnosis {

// More events than this are not read: the rules that need events then see the first ones
// of each track only, and the answer says so.
inline constexpr int64_t kMaxFactEvents = 2'000'000;  // 40 bytes each: 80 MB

struct DeviceOp {
  int64_t start_ns = 0;
  int64_t dur_ns = 0;
  int64_t correlation = 0;
  uint32_t name = 0;
  uint32_t track = 0;
  uint32_t device = 0;  // index into ProfileFacts::devices
  uint8_t kind = 0;     // analysis::ActivityKind
  bool has_correlation = false;
  int64_t end_ns() const { return start_ns + dur_ns; }
};

struct HostOp {
  int64_t start_ns = 0;
  int64_t dur_ns = 0;
  int64_t correlation = 0;
  uint32_t name = 0;
  uint32_t track = 0;
  bool is_runtime = false;
  bool has_correlation = false;
  int64_t end_ns() const { return start_ns + dur_ns; }
};

struct ProfileFacts {
  std::string profile_id;
  v1::ProfileSummary summary;
  std::shared_ptr<const timeline::Timeline> timeline;  // owns the names the ops point at; null: no events
  std::vector<std::string> devices;  // device ids, as in the summary's devices[]
  std::vector<DeviceOp> device_ops;  // sorted by start
  std::vector<HostOp> host_ops;      // sorted by start
  bool truncated = false;            // kMaxFactEvents reached
  // The records the server made when the profile was committed (server/ingest/regression_detector.h).
  std::vector<v1::Regression> regressions;

  std::string_view name(uint32_t id) const { return timeline->name(id); }
  const std::string& track_id(uint32_t track) const { return timeline->track(track).id(); }
};

// Reads every device and host event of the timeline (counters are in the summary).
absl::StatusOr<ProfileFacts> ReadProfileFacts(std::string profile_id, v1::ProfileSummary summary,
                                              std::shared_ptr<const timeline::Timeline> timeline,
                                              timeline::TimelineReader& reader,
                                              int64_t max_events = kMaxFactEvents);

// Facts without events, for a profile stored before the event store: the summary rules run.
ProfileFacts SummaryOnlyFacts(std::string profile_id, v1::ProfileSummary summary);

}  // namespace fleetprof::diagnosis
