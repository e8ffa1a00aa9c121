#include "server/fleet/fleet_rollups.h"

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/clock_sync_labels.h"
#include "spdlog/spdlog.h"

namespace fleetprof {
namespace {

// Labels that differ per upload of a capture: a cell keyed by them would hold one profile.
constexpr const char* kPerUploadLabels[] = {"capture_id",       "source",          "pid", "uploaded_by",
                                            kClockOffsetLabel, kClockUncertaintyLabel, kCaptureStartLabel,
                                            kCaptureWindowLabel};

// Every grouping has a record per cell, in FleetDimension's order.
std::vector<std::string> StoredGroupings() {
  std::vector<std::string> out;
  for (int d = 0; d < kFleetDimensions; ++d) out.push_back(FleetDimensionName(static_cast<FleetDimension>(d)));
  return out;
}

// The capture target this profile came from: its node and job, and its pid when both say one.
const v1::CaptureTarget* TargetOf(const v1::ProfileInfo& info, const v1::Capture& capture) {
  auto pid = info.labels().find("pid");
  const v1::CaptureTarget* match = nullptr;
  for (const v1::CaptureTarget& t : capture.targets()) {
    if (t.node() != info.node() || t.job() != info.job() || t.weight_device_ns() <= 0) continue;
    if (pid != info.labels().end() && t.pid() > 0 && pid->second != absl::StrCat(t.pid())) continue;
    if (match == nullptr || t.profile_id() == info.profile_id()) match = &t;
  }
  return match;
}

// NVML's model of the node's devices at capture (attached at commit), else the trace's own name.
std::string DeviceTypeOf(const v1::ProfileSummary& summary) {
  for (const v1::DeviceSample& s : summary.device_samples()) {
    if (!s.model().empty()) return s.model();
  }
  for (const auto& [key, value] : summary.metadata()) {
    if (key.starts_with("device.") && key.ends_with(".name") && !value.empty()) return value;
  }
  return "";
}

// The profile's span: its start to its end, or its devices' first start to last end when the
// summary has no bounds of its own.
int64_t SpanOf(const v1::ProfileSummary& summary) {
  if (summary.end_ns() > summary.start_ns()) return summary.end_ns() - summary.start_ns();
  int64_t first = INT64_MAX, last = INT64_MIN;
  for (const v1::DeviceBreakdown& d : summary.devices()) {
    if (d.end_ns() <= d.start_ns()) continue;
    first = std::min(first, d.start_ns());
    last = std::max(last, d.end_ns());
  }
  return last > first ? last - first : 0;
}

}  // namespace

std::map<std::string, std::string> JobLabelsOf(const google::protobuf::Map<std::string, std::string>& labels) {
  std::map<std::string, std::string> out(labels.begin(), labels.end());
  for (const char* label : kPerUploadLabels) out.erase(label);
  return out;
}

std::optional<SampledProfile> SampledProfileOf(const v1::ProfileInfo& info, const v1::ProfileSummary& summary,
                                               const v1::Capture& capture, int64_t committed_ns) {
  if (!capture.has_reason() || capture.reason() != v1::Capture::SAMPLED) return std::nullopt;
  auto id = info.labels().find("capture_id");
  if (id == info.labels().end() || id->second != capture.capture_id()) return std::nullopt;
  const v1::CaptureTarget* target = TargetOf(info, capture);
  if (target == nullptr) return std::nullopt;
  SampledProfile p;
  p.job = info.job();
  p.node = info.node();
  p.device_type = DeviceTypeOf(summary);
  p.labels = JobLabelsOf(info.labels());
  p.committed_ns = committed_ns;
  p.weight_device_ns = target->weight_device_ns();
  p.inclusion_probability = target->inclusion_probability();
  const int64_t devices = std::max<int64_t>({1, target->devices(), summary.devices_size()});
  const int64_t span = SpanOf(summary);
  p.span_device_ns = devices * span;
  for (const v1::DeviceBreakdown& d : summary.devices()) p.busy_device_ns += std::max<int64_t>(0, d.busy_ns());
  p.busy_device_ns = std::min(p.busy_device_ns, p.span_device_ns);
  for (const v1::KernelStat& k : summary.kernels()) p.kernels.emplace_back(k.name(), k.total_ns());
  for (const v1::OpStat& o : summary.ops()) p.ops.emplace_back(o.name(), o.device_total_ns());
  return p;
}

FleetRollupWriter::FleetRollupWriter(FleetRollupStore* store, Clock* clock, double retention_days,
                                     CaptureLookup capture_of, prometheus::Registry* metrics)
    : store_(store), clock_(clock), keep_hours_(FleetKeepHours(retention_days)), capture_of_(std::move(capture_of)) {
  if (metrics == nullptr) return;
  auto counter = [metrics](const char* name, const char* help) {
    return &prometheus::BuildCounter().Name(name).Help(help).Register(*metrics).Add({});
  };
  busy_seconds_ = counter("fleetprof_fleet_busy_device_seconds_total",
                          "Estimated device-seconds something ran on the fleet's devices, from the sampled profiles "
                          "(each profile's busy share x the device-time it stands for)");
  idle_seconds_ = counter("fleetprof_fleet_idle_device_seconds_total",
                          "Estimated device-seconds the fleet's devices were present and idle, from the sampled profiles");
  profiles_ = counter("fleetprof_fleet_sampled_profiles_total", "Sampled profiles counted in the fleet's rollups");
}

absl::Status FleetRollupWriter::Observe(const v1::ProfileInfo& info, const v1::ProfileSummary& summary) {
  auto label = info.labels().find("capture_id");
  if (label == info.labels().end() || !capture_of_) return absl::OkStatus();
  absl::StatusOr<v1::Capture> capture = capture_of_(label->second);
  if (!capture.ok()) return absl::IsNotFound(capture.status()) ? absl::OkStatus() : capture.status();
  std::optional<SampledProfile> sampled = SampledProfileOf(info, summary, *capture, clock_->Now());
  if (!sampled) return absl::OkStatus();
  if (sampled->labels.empty() && job_labels_) sampled->labels = job_labels_(sampled->job);
  return Add(*sampled);
}

absl::Status FleetRollupWriter::Add(const SampledProfile& p) {
  if (absl::Status s = CheckSampledProfile(p); !s.ok()) return s;
  const FleetCellId id{FleetHourOf(p.committed_ns), p.job, p.labels};
  const std::vector<std::string> groupings = StoredGroupings();
  const size_t stripe = std::hash<std::string>()(FleetRollupStore::Key(groupings.front(), id)) % kWriteStripes;
  absl::Status s;
  {
    absl::MutexLock lock(&write_mu_[stripe]);
    s = store_->Update(id, groupings, [&](std::vector<v1::FleetRollupCell>& records) {
      for (size_t i = 0; i < records.size(); ++i) {
        const auto d = static_cast<FleetDimension>(i);
        FleetCell cell = FleetCellFromRollup(records[i], d);
        AddToCell(p, &cell, 1u << static_cast<int>(d));
        CapCellRows(kFleetMaxRowsPerCell, &cell);
        FleetCellToRollup(cell, d, &records[i]);
      }
    });
  }
  if (!s.ok()) return s;
  if (profiles_ != nullptr) {
    const double seconds_per_ns = static_cast<double>(p.weight_device_ns) / static_cast<double>(p.span_device_ns) / 1e9;
    busy_seconds_->Increment(seconds_per_ns * static_cast<double>(p.busy_device_ns));
    idle_seconds_->Increment(seconds_per_ns * static_cast<double>(p.span_device_ns - p.busy_device_ns));
    profiles_->Increment();
  }
  // The profile is counted whatever the expiry does: its failure is said here and the next
  // commit tries again, and a caller that retried a failed Add would count the profile twice.
  if (absl::Status expired = ExpireOnceAnHour(FleetHourOf(clock_->Now())); !expired.ok()) {
    spdlog::warn("fleet rollups: cells past {} h not expired this time (the next commit tries again): {}",
                 keep_hours_, std::string(expired.message()));
  }
  return absl::OkStatus();
}

absl::Status FleetRollupWriter::ExpireOnceAnHour(int64_t hour_now) {
  int64_t last = expired_at_hour_.load();
  if (hour_now <= last || !expired_at_hour_.compare_exchange_strong(last, hour_now)) return absl::OkStatus();
  absl::StatusOr<int64_t> gone = store_->ExpireBefore(StoredGroupings(), hour_now - keep_hours_);
  if (!gone.ok()) {
    // Not this hour's expiry after all: the next commit tries again (unless a later hour's ran).
    int64_t claimed = hour_now;
    expired_at_hour_.compare_exchange_strong(claimed, last);
  }
  return gone.status();
}

std::map<std::string, std::string> NewestJobLabelsIn(const std::vector<v1::ProfileInfo>& newest_first) {
  const size_t depth = std::min(newest_first.size(), static_cast<size_t>(kJobLabelsSearchDepth));
  for (size_t i = 0; i < depth; ++i) {
    std::map<std::string, std::string> labels = JobLabelsOf(newest_first[i].labels());
    if (!labels.empty()) return labels;
  }
  return {};
}

FleetRollupWriter::JobLabelsLookup NewestJobLabels(ProfileTable* profiles) {
  return [profiles](const std::string& job) {
    v1::ListProfilesRequest request;
    request.set_job(job);
    request.set_page_size(kJobLabelsSearchDepth);
    absl::StatusOr<ProfilePage> page = profiles->List(request);
    return page.ok() ? NewestJobLabelsIn(page->profiles) : std::map<std::string, std::string>();
  };
}

}  // namespace fleetprof
