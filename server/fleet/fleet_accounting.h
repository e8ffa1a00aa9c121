#pragma once
// Fleet accounting (issue 42, item 3): where the fleet's device-time goes, estimated from sampled
// profiles. Each sampled profile stands for weight_device_ns of device-time (devices x period /
// inclusion probability); a row's estimate from one profile is weight x (row_ns / span_device_ns),
// its exact share of what the profile saw scaled to what it stands for. Under Poisson sampling
// this is the Horvitz-Thompson estimator, and its variance is the sum over profiles of
// (1 - inclusion_probability) x estimate^2: additive, so a rollup keeps sums only. The 95%
// interval is estimate +- 1.96 x sqrt(variance), clamped at 0.
//
// Sums are kept per (hour, job, labels) cell: the hour of the profile's commit on the server's
// clock. FleetAccumulator holds cells in memory (pure, for tests and simulations);
// storage/fleet_rollup_store.h keeps the same cells in the catalog.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "fleetprof/v1/fleet.pb.h"

namespace fleetprof {

inline constexpr int64_t kFleetHourNs = 3600LL * 1000 * 1000 * 1000;
inline constexpr int64_t kFleetDefaultWindowNs = 24 * kFleetHourNs;
// The bucket a cell's rows past its cap are folded into (storage bounds a cell's rows).
inline constexpr std::string_view kFleetOtherRow = "(other)";
// Stored cells: rows kept per grouping of a cell, and the days cells are kept (or
// --retention_days when shorter): a window reaches back at most that far.
inline constexpr int kFleetMaxRowsPerCell = 200;
inline constexpr int64_t kFleetMaxKeepDays = 35;
inline constexpr int64_t kFleetMaxSinceMs = kFleetMaxKeepDays * 24 * 3600 * 1000;

// One sampled target's profile as fleet accounting counts it.
struct SampledProfile {
  std::string job, node, device_type;
  std::map<std::string, std::string> labels;  // the profile's labels (job labels)
  int64_t committed_ns = 0;                   // server clock at commit: picks the hour
  int64_t weight_device_ns = 0;               // CaptureTarget.weight_device_ns
  double inclusion_probability = 1;           // CaptureTarget.inclusion_probability
  int64_t span_device_ns = 0;                 // devices x the profile's span: the device-time the profile saw
  int64_t busy_device_ns = 0;                 // device activity (union per device, summed over devices)
  std::vector<std::pair<std::string, int64_t>> kernels, ops;  // exact device ns per name
};

// What a FleetTop request groups by.
enum class FleetDimension { kKernel, kOp, kJob, kNode, kDeviceType };
inline constexpr int kFleetDimensions = 5;
// "kernel" (also ""), "op", "job", "node" or "device_type"; anything else is INVALID_ARGUMENT
// naming the choices.
absl::StatusOr<FleetDimension> ParseFleetDimension(std::string_view by);
const char* FleetDimensionName(FleetDimension dimension);
// How many hours of cells are kept with `retention_days` (0: forever) of profiles.
int64_t FleetKeepHours(double retention_days);

// A Horvitz-Thompson sum: the estimate and its variance.
struct FleetEstimate {
  double device_ns = 0;
  double variance = 0;
  void Add(double estimate, double inclusion_probability) {
    device_ns += estimate;
    variance += (1 - inclusion_probability) * estimate * estimate;
  }
  void Add(const FleetEstimate& other) {
    device_ns += other.device_ns;
    variance += other.variance;
  }
};

struct FleetRowSum {
  FleetEstimate estimate;
  int64_t samples = 0;  // profiles with this row
};

// The sums of one (hour, job, labels) cell.
struct FleetCell {
  int64_t hour = 0;  // committed_ns / 1 h
  std::string job;
  std::map<std::string, std::string> labels;
  int64_t samples = 0;
  FleetEstimate total, busy, idle;
  // Rows per dimension but kJob (the cell's job is its row): index by FleetDimension.
  std::map<std::string, FleetRowSum> rows[kFleetDimensions];
};

// Whether `p` can be counted: a job, a positive weight and span, 0 < probability <= 1, busy
// within the span. Says what is wrong otherwise.
absl::Status CheckSampledProfile(const SampledProfile& p);
// Adds `p`'s estimates to `cell` (which must be p's hour, job and labels): the totals, and the
// rows of the dimensions in `dimensions` (bit 1 << FleetDimension). REQUIRES: p checked.
inline constexpr uint32_t kAllFleetDimensions = (1u << kFleetDimensions) - 1;
void AddToCell(const SampledProfile& p, FleetCell* cell, uint32_t dimensions = kAllFleetDimensions);
// Keeps each dimension's `max_rows` - 1 largest rows of `cell` and folds the rest into
// kFleetOtherRow (its samples: the most any folded row had, at most the cell's samples).
void CapCellRows(int max_rows, FleetCell* cell);
// The cell's hour of `committed_ns`.
inline int64_t FleetHourOf(int64_t committed_ns) {
  return committed_ns >= 0 ? committed_ns / kFleetHourNs : (committed_ns - kFleetHourNs + 1) / kFleetHourNs;
}
// The first hour a request at `now_ns` counts: the window rounded out to whole hours.
int64_t FleetFirstHour(const v1::FleetTopRequest& request, int64_t now_ns);
// Whether labels are in a request's selection (every pair of the request's matches).
template <typename LabelMap>
bool FleetLabelsMatch(const LabelMap& labels, const v1::FleetTopRequest& request) {
  for (const auto& [key, value] : request.labels()) {
    auto it = labels.find(key);
    if (it == labels.end() || it->second != value) return false;
  }
  return true;
}

// A cell's grouping as a stored record (FleetRollupCell: totals and that grouping's rows; kJob
// has totals only), and back.
void FleetCellToRollup(const FleetCell& cell, FleetDimension dimension, v1::FleetRollupCell* out);
FleetCell FleetCellFromRollup(const v1::FleetRollupCell& record, FleetDimension dimension);

// Merges cells (already selected: in the window, labels matching) into the answer to `request`.
class FleetTopBuilder {
 public:
  // REQUIRES: request.by() parses (ParseFleetDimension).
  FleetTopBuilder(const v1::FleetTopRequest& request, int64_t since_ns);
  void Add(const FleetCell& cell);
  // The same from a stored record of the request's grouping.
  void Add(const v1::FleetRollupCell& record);
  // Rows by device_ns, largest first (then by name), at most request.limit() when positive.
  v1::FleetTopResponse Finish() const;

 private:
  v1::FleetTopRequest request_;
  FleetDimension dimension_;
  int64_t since_ns_;
  int64_t samples_ = 0;
  FleetEstimate total_, busy_, idle_;
  // Hashed: a window merges millions of rows under a few thousand long kernel names.
  absl::flat_hash_map<std::string, FleetRowSum> rows_;
};

// In-memory rollup cells: (hour, job, labels) -> sums. Pure and testable; the simulated-time
// fleet test drives it, and the catalog's rollups (storage/fleet_rollup_store.h) use its parts.
class FleetAccumulator {
 public:
  // Adds a sampled profile; one that cannot be counted (CheckSampledProfile) is left out and
  // returns false.
  bool Add(const SampledProfile& p);
  // The answer from the cells in the window ending at `now_ns`. An unknown `by` answers no rows.
  v1::FleetTopResponse Top(const v1::FleetTopRequest& request, int64_t now_ns) const;

 private:
  struct Key {
    int64_t hour;
    std::string job;
    std::map<std::string, std::string> labels;
    bool operator<(const Key& o) const {
      return std::tie(hour, job, labels) < std::tie(o.hour, o.job, o.labels);
    }
  };
  std::map<Key, FleetCell> cells_;
};

}  // namespace fleetprof
