#include "server/fleet/fleet_accounting.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace fleetprof {
namespace {

constexpr double kZ95 = 1.96;
constexpr const char* kUnknown = "(unknown)";  // a node or device type the profile does not name
constexpr const char* kDimensionNames[kFleetDimensions] = {"kernel", "op", "job", "node", "device_type"};

int64_t Rounded(double ns) { return static_cast<int64_t>(std::llround(std::max(0.0, ns))); }

void FillRow(const std::string& name, const FleetRowSum& sum, double total_ns, v1::FleetTopRow* row) {
  const double half = kZ95 * std::sqrt(std::max(0.0, sum.estimate.variance));
  row->set_name(name);
  row->set_device_ns(Rounded(sum.estimate.device_ns));
  row->set_ci95_low_ns(Rounded(sum.estimate.device_ns - half));
  row->set_ci95_high_ns(Rounded(sum.estimate.device_ns + half));
  row->set_share(total_ns > 0 ? sum.estimate.device_ns / total_ns : 0);
  row->set_samples(sum.samples);
}

// Adds `estimate` to the row `name` of `rows`, counting the profile once per row.
void AddRow(std::map<std::string, FleetRowSum>& rows, const std::string& name, double estimate, double probability) {
  FleetRowSum& row = rows[name];
  row.estimate.Add(estimate, probability);
  ++row.samples;
}

// A profile's rows by name: names repeated in its list (e.g. one per device) are summed first,
// so its estimate is one Horvitz-Thompson term and it counts as one sample.
std::map<std::string, int64_t> SummedByName(const std::vector<std::pair<std::string, int64_t>>& named) {
  std::map<std::string, int64_t> out;
  for (const auto& [name, ns] : named) {
    if (ns > 0) out[name] += ns;
  }
  return out;
}

}  // namespace

absl::StatusOr<FleetDimension> ParseFleetDimension(std::string_view by) {
  if (by.empty()) return FleetDimension::kKernel;
  for (int i = 0; i < kFleetDimensions; ++i) {
    if (by == kDimensionNames[i]) return static_cast<FleetDimension>(i);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown fleet top grouping \"", std::string(by), "\": --by takes kernel, op, job, node or device_type"));
}

const char* FleetDimensionName(FleetDimension dimension) { return kDimensionNames[static_cast<int>(dimension)]; }

int64_t FleetKeepHours(double retention_days) {
  const double days = retention_days > 0 ? std::min<double>(retention_days, kFleetMaxKeepDays) : kFleetMaxKeepDays;
  return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(days * 24)));
}

absl::Status CheckSampledProfile(const SampledProfile& p) {
  if (p.job.empty()) return absl::InvalidArgumentError("a sampled profile without a job is not counted");
  if (p.weight_device_ns <= 0) return absl::InvalidArgumentError("a sampled profile stands for no device-time");
  if (!(p.inclusion_probability > 0 && p.inclusion_probability <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("inclusion probability ", p.inclusion_probability, " is not in (0, 1]"));
  }
  if (p.span_device_ns <= 0) return absl::InvalidArgumentError("a sampled profile saw no device-time");
  if (p.busy_device_ns < 0 || p.busy_device_ns > p.span_device_ns) {
    return absl::InvalidArgumentError(
        absl::StrCat("busy device-time ", p.busy_device_ns, " ns is outside the span's ", p.span_device_ns, " ns"));
  }
  return absl::OkStatus();
}

void AddToCell(const SampledProfile& p, FleetCell* cell, uint32_t dimensions) {
  const double pi = p.inclusion_probability;
  const double weight = static_cast<double>(p.weight_device_ns);
  const double per_ns = weight / static_cast<double>(p.span_device_ns);  // device-time each seen ns stands for
  ++cell->samples;
  cell->total.Add(weight, pi);
  cell->busy.Add(per_ns * static_cast<double>(p.busy_device_ns), pi);
  cell->idle.Add(per_ns * static_cast<double>(p.span_device_ns - p.busy_device_ns), pi);
  auto& rows = cell->rows;
  auto wanted = [dimensions](FleetDimension d) { return (dimensions >> static_cast<int>(d)) & 1u; };
  if (wanted(FleetDimension::kKernel)) {
    for (const auto& [name, ns] : SummedByName(p.kernels)) {
      AddRow(rows[static_cast<int>(FleetDimension::kKernel)], name, per_ns * static_cast<double>(ns), pi);
    }
  }
  if (wanted(FleetDimension::kOp)) {
    for (const auto& [name, ns] : SummedByName(p.ops)) {
      AddRow(rows[static_cast<int>(FleetDimension::kOp)], name, per_ns * static_cast<double>(ns), pi);
    }
  }
  // A node or a device type holds the whole device-time the profile stands for, as a job does.
  if (wanted(FleetDimension::kNode)) {
    AddRow(rows[static_cast<int>(FleetDimension::kNode)], p.node.empty() ? kUnknown : p.node, weight, pi);
  }
  if (wanted(FleetDimension::kDeviceType)) {
    AddRow(rows[static_cast<int>(FleetDimension::kDeviceType)], p.device_type.empty() ? kUnknown : p.device_type,
           weight, pi);
  }
}

void FleetCellToRollup(const FleetCell& cell, FleetDimension dimension, v1::FleetRollupCell* out) {
  auto put = [](const FleetEstimate& e, v1::FleetRollupSum* sum) {
    sum->set_device_ns(e.device_ns);
    sum->set_variance(e.variance);
  };
  out->set_by(FleetDimensionName(dimension));
  out->set_hour(cell.hour);
  out->set_job(cell.job);
  out->mutable_labels()->clear();
  for (const auto& [k, v] : cell.labels) (*out->mutable_labels())[k] = v;
  out->set_samples(cell.samples);
  put(cell.total, out->mutable_total());
  put(cell.busy, out->mutable_busy());
  put(cell.idle, out->mutable_idle());
  out->clear_rows();
  for (const auto& [name, sum] : cell.rows[static_cast<int>(dimension)]) {
    v1::FleetRollupRow* row = out->add_rows();
    row->set_name(name);
    put(sum.estimate, row->mutable_sum());
    row->set_samples(sum.samples);
  }
}

FleetCell FleetCellFromRollup(const v1::FleetRollupCell& record, FleetDimension dimension) {
  auto get = [](const v1::FleetRollupSum& sum) { return FleetEstimate{sum.device_ns(), sum.variance()}; };
  FleetCell cell;
  cell.hour = record.hour();
  cell.job = record.job();
  cell.labels.insert(record.labels().begin(), record.labels().end());
  cell.samples = record.samples();
  cell.total = get(record.total());
  cell.busy = get(record.busy());
  cell.idle = get(record.idle());
  auto& rows = cell.rows[static_cast<int>(dimension)];
  for (const v1::FleetRollupRow& row : record.rows()) {
    FleetRowSum& sum = rows[row.name()];
    sum.estimate.Add(get(row.sum()));
    sum.samples += row.samples();
  }
  return cell;
}

void CapCellRows(int max_rows, FleetCell* cell) {
  if (max_rows < 1) max_rows = 1;
  for (auto& rows : cell->rows) {
    if (static_cast<int>(rows.size()) <= max_rows) continue;
    std::vector<std::pair<std::string, FleetRowSum>> sorted(rows.begin(), rows.end());
    FleetRowSum other;
    if (auto it = rows.find(std::string(kFleetOtherRow)); it != rows.end()) other = it->second;
    std::erase_if(sorted, [](const auto& r) { return r.first == kFleetOtherRow; });
    std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
      if (a.second.estimate.device_ns != b.second.estimate.device_ns) {
        return a.second.estimate.device_ns > b.second.estimate.device_ns;
      }
      return a.first < b.first;
    });
    rows.clear();
    const size_t keep = static_cast<size_t>(max_rows - 1);
    for (size_t i = 0; i < sorted.size(); ++i) {
      if (i < keep) {
        rows.emplace(std::move(sorted[i].first), sorted[i].second);
        continue;
      }
      other.estimate.Add(sorted[i].second.estimate);
      other.samples = std::min(cell->samples, std::max(other.samples, sorted[i].second.samples));
    }
    rows.emplace(std::string(kFleetOtherRow), other);
  }
}

int64_t FleetFirstHour(const v1::FleetTopRequest& request, int64_t now_ns) {
  const int64_t window_ns = request.since_ms() > 0 ? request.since_ms() * 1000000 : kFleetDefaultWindowNs;
  return FleetHourOf(now_ns - window_ns);
}

FleetTopBuilder::FleetTopBuilder(const v1::FleetTopRequest& request, int64_t since_ns)
    : request_(request), dimension_(ParseFleetDimension(request.by()).value()), since_ns_(since_ns) {}

void FleetTopBuilder::Add(const FleetCell& cell) {
  samples_ += cell.samples;
  total_.Add(cell.total);
  busy_.Add(cell.busy);
  idle_.Add(cell.idle);
  if (dimension_ == FleetDimension::kJob) {
    FleetRowSum& row = rows_[cell.job];
    row.estimate.Add(cell.total);
    row.samples += cell.samples;
    return;
  }
  for (const auto& [name, sum] : cell.rows[static_cast<int>(dimension_)]) {
    FleetRowSum& row = rows_[name];
    row.estimate.Add(sum.estimate);
    row.samples += sum.samples;
  }
}

void FleetTopBuilder::Add(const v1::FleetRollupCell& record) {
  auto add = [](const v1::FleetRollupSum& from, FleetEstimate& to) { to.Add(FleetEstimate{from.device_ns(), from.variance()}); };
  samples_ += record.samples();
  add(record.total(), total_);
  add(record.busy(), busy_);
  add(record.idle(), idle_);
  if (dimension_ == FleetDimension::kJob) {
    FleetRowSum& row = rows_[record.job()];
    add(record.total(), row.estimate);
    row.samples += record.samples();
    return;
  }
  for (const v1::FleetRollupRow& r : record.rows()) {
    FleetRowSum& row = rows_[r.name()];
    add(r.sum(), row.estimate);
    row.samples += r.samples();
  }
}

v1::FleetTopResponse FleetTopBuilder::Finish() const {
  v1::FleetTopResponse out;
  out.set_by(FleetDimensionName(dimension_));
  out.set_since_ns(since_ns_);
  out.set_samples(samples_);
  out.set_total_device_ns(Rounded(total_.device_ns));
  out.set_busy_device_ns(Rounded(busy_.device_ns));
  out.set_idle_device_ns(Rounded(idle_.device_ns));
  std::vector<const std::pair<const std::string, FleetRowSum>*> order;
  order.reserve(rows_.size());
  for (const auto& row : rows_) order.push_back(&row);
  auto larger = [](const auto* a, const auto* b) {
    if (a->second.estimate.device_ns != b->second.estimate.device_ns) {
      return a->second.estimate.device_ns > b->second.estimate.device_ns;
    }
    return a->first < b->first;
  };
  size_t n = order.size();
  if (request_.limit() > 0) n = std::min(n, static_cast<size_t>(request_.limit()));
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n), order.end(), larger);
  for (size_t i = 0; i < n; ++i) FillRow(order[i]->first, order[i]->second, total_.device_ns, out.add_rows());
  return out;
}

bool FleetAccumulator::Add(const SampledProfile& p) {
  if (!CheckSampledProfile(p).ok()) return false;
  Key key{FleetHourOf(p.committed_ns), p.job, p.labels};
  auto [it, fresh] = cells_.try_emplace(key);
  if (fresh) {
    it->second.hour = key.hour;
    it->second.job = p.job;
    it->second.labels = p.labels;
  }
  AddToCell(p, &it->second);
  return true;
}

v1::FleetTopResponse FleetAccumulator::Top(const v1::FleetTopRequest& request, int64_t now_ns) const {
  const int64_t first_hour = FleetFirstHour(request, now_ns);
  if (!ParseFleetDimension(request.by()).ok()) {
    v1::FleetTopResponse empty;
    empty.set_by(request.by());
    empty.set_since_ns(first_hour * kFleetHourNs);
    return empty;
  }
  FleetTopBuilder builder(request, first_hour * kFleetHourNs);
  for (auto it = cells_.lower_bound(Key{first_hour, "", {}}); it != cells_.end(); ++it) {
    if (FleetLabelsMatch(it->second.labels, request)) builder.Add(it->second);
  }
  return builder.Finish();
}

}  // namespace fleetprof
