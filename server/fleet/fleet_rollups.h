#pragma once
// Fleet accounting's rollups kept at commit (issue 42, item 3): when a profile of a SAMPLED
// capture is committed, its exact shares (kernels[], ops[], the devices' busy time and span)
// and the device-time its capture target stands for are added to its (hour, job, labels) cell
// in the catalog (storage/fleet_rollup_store.h). FleetTop (server/query/fleet_top_query.h)
// answers from the cells of the window only, never from profiles.
//
// Bounds: a cell keeps the kFleetMaxRowsPerCell - 1 largest rows of each grouping and folds
// the rest into "(other)". Cells are kept kFleetMaxKeepDays, or --retention_days when that is
// shorter; the first commit of each hour deletes the older ones. Deleting a profile does not
// subtract it: the rollups count what was sampled, as a counter does.

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "fleetprof/v1/capture.pb.h"
#include "fleetprof/v1/profile.pb.h"
#include "prometheus/counter.h"
#include "prometheus/registry.h"
#include "server/fleet/fleet_accounting.h"
#include "storage/fleet_rollup_store.h"
#include "storage/profile_table.h"

namespace fleetprof {

// The sampled profile `info` (committed at `committed_ns`) counts as, when its capture_id
// label names `capture`, a SAMPLED one with a target of the profile's node and job that carries
// a weight. nullopt otherwise (not sampled: nothing to count). Devices: the target's, at least
// the profile's own; span: devices x the profile's span; busy: its devices' busy time; labels:
// the profile's, less those a capture's upload carries (capture_id, source, pid, clocks).
std::optional<SampledProfile> SampledProfileOf(const v1::ProfileInfo& info, const v1::ProfileSummary& summary,
                                               const v1::Capture& capture, int64_t committed_ns);

// `labels` less those a capture's upload carries (capture_id, source, pid, clocks, uploaded_by):
// what is left says something of the job, not of one upload.
std::map<std::string, std::string> JobLabelsOf(const google::protobuf::Map<std::string, std::string>& labels);

class FleetRollupWriter {
 public:
  // The capture a capture_id names (CaptureCoordinator::Get).
  using CaptureLookup = std::function<absl::StatusOr<v1::Capture>(const std::string& capture_id)>;
  // A job's labels from its other profiles (e.g. its newest with any JobLabelsOf), for sampled
  // profiles that carry none of their own; may be empty.
  using JobLabelsLookup = std::function<std::map<std::string, std::string>(const std::string& job)>;

  // `retention_days` 0: profiles are kept forever (cells kFleetMaxKeepDays). `metrics` (may be
  // null) gets fleetprof_fleet_{busy,idle}_device_seconds_total and
  // fleetprof_fleet_sampled_profiles_total. Nothing is owned.
  FleetRollupWriter(FleetRollupStore* store, Clock* clock, double retention_days, CaptureLookup capture_of,
                    prometheus::Registry* metrics);
  // Sampled profiles without job labels of their own take the job's from `lookup`.
  void set_job_labels(JobLabelsLookup lookup) { job_labels_ = std::move(lookup); }

  // Runs once `info` is committed: a profile of a SAMPLED capture (SampledProfileOf) is added
  // to its cell, stamped with the clock's time now (labels: its own job labels, else the job's
// from set_job_labels); any other is left alone.
  absl::Status Observe(const v1::ProfileInfo& info, const v1::ProfileSummary& summary);
  // Adds `p` to its cell (CheckSampledProfile first: INVALID_ARGUMENT saying why it cannot be
  // counted); once per hour of the clock, deletes the cells past the keep. Commits of other
  // cells, and the hourly expiry, never hold it back (see the stripes below).
  absl::Status Add(const SampledProfile& p);

 private:
  static constexpr size_t kWriteStripes = 16;

  // The first caller of each hour deletes the cells past the keep, holding no lock: a commit
  // that comes meanwhile writes a cell of this hour, which the expiry does not touch, and skips
  // the expiry (it is this hour's already). A failed expiry is tried again by the next commit.
  absl::Status ExpireOnceAnHour(int64_t hour_now);

  FleetRollupStore* store_;
  Clock* clock_;
  int64_t keep_hours_;
  CaptureLookup capture_of_;
  JobLabelsLookup job_labels_;
  // Estimates of the fleet's device-seconds, summed as profiles are counted (never subtracted).
  prometheus::Counter* busy_seconds_ = nullptr;
  prometheus::Counter* idle_seconds_ = nullptr;
  prometheus::Counter* profiles_ = nullptr;
  std::atomic<int64_t> expired_at_hour_{INT64_MIN};
  // Orders this process's read-modify-writes of one cell (a stripe per cell's hash), so its
  // upload workers committing profiles of one job never lose compare-and-set races to each
  // other and use up the store's retries; other replicas' are those retries. Held across the
  // cell's compare-and-set only, never across the expiry: a worker waits for another's write of
  // a cell in its stripe, nothing else. No reader takes it, and it guards no member (the cells
  // are in the catalog).
  std::array<absl::Mutex, kWriteStripes> write_mu_;
};

// How many of a job's newest profiles are looked through for its labels, by fleet accounting
// and by the sampler alike.
inline constexpr int kJobLabelsSearchDepth = 32;
// The JobLabelsOf of the first of `newest_first` (up to kJobLabelsSearchDepth of them) that has
// any; empty when none has.
std::map<std::string, std::string> NewestJobLabelsIn(const std::vector<v1::ProfileInfo>& newest_first);
// The labels of a job's newest profile that has any JobLabelsOf (NewestJobLabelsIn): what a
// sampled profile of the job is counted under when it has none of its own.
FleetRollupWriter::JobLabelsLookup NewestJobLabels(ProfileTable* profiles);

}  // namespace fleetprof
