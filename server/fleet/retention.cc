#include "server/fleet/retention.h"

#include <cstdlib>

#include <chrono>
#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/runtime.h"
#include "spdlog/spdlog.h"

namespace fleetprof {
namespace {

constexpr double kNanosPerDay = 86400e9;

int64_t DaysToNs(double days) {
  const double ns = days * kNanosPerDay;
  return ns >= 9e18 ? INT64_MAX : static_cast<int64_t>(ns);
}

}  // namespace

absl::StatusOr<std::map<std::string, double>> RetentionPolicy::ParseJobDays(const std::string& text) {
  std::map<std::string, double> out;
  if (text.empty()) return out;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    const size_t eq = part.find('=');
    double days = 0;
    if (eq == 0 || eq == absl::string_view::npos || !absl::SimpleAtod(part.substr(eq + 1), &days) ||
        !(days >= 0) || !std::isfinite(days)) {
      return absl::InvalidArgumentError(absl::StrCat("--job_retention_days wants JOB=DAYS[,JOB=DAYS…] with DAYS >= 0, "
                                                     "not '", std::string(part), "'"));
    }
    out[std::string(part.substr(0, eq))] = days;
  }
  return out;
}

int64_t RetentionPolicy::KeepNs(const std::string& job) const {
  auto it = job_days.find(job);
  const double days = it != job_days.end() ? it->second : retention_days;
  return days > 0 ? DaysToNs(days) : 0;
}

Retention::Retention(RetentionPolicy policy, Storage* store, AgentRegistry* agents,
                     std::function<absl::Status(const std::string&)> delete_profile, prometheus::Registry* metrics,
                     Clock* clock, std::function<bool()> leads, std::function<int64_t()> cluster_clock_offset)
    : policy_(std::move(policy)),
      store_(store),
      agents_(agents),
      delete_profile_(std::move(delete_profile)),
      deleted_(prometheus::BuildCounter()
                   .Name("fleetprof_server_retention_deleted_total")
                   .Help("Records retention removed: profiles past their age (reason age) or while the database "
                         "was over --max_disk_mb (disk), captures past --capture_retention_days, agents gone "
                         "for --agent_expiry_days")
                   .Register(*metrics)),
      deleted_age_(deleted_.Add({{"kind", "profile"}, {"reason", "age"}})),
      deleted_disk_(deleted_.Add({{"kind", "profile"}, {"reason", "disk"}})),
      deleted_captures_(deleted_.Add({{"kind", "capture"}, {"reason", "age"}})),
      deleted_agents_(deleted_.Add({{"kind", "agent"}, {"reason", "age"}})),
      clock_(clock),
      leads_(std::move(leads)),
      cluster_clock_offset_(std::move(cluster_clock_offset)) {
  std::unique_ptr<PeriodicLoop> loop = PeriodicLoop::StartOrLog(
      "the retention loop", clock_,
      [this](int64_t now) {
        RunOnce();
        return now + policy_.check_every_s * 1'000'000'000;
      },
      "retention will not run");
  absl::MutexLock lock(&loop_mu_);
  loop_ = std::move(loop);
}

Retention::~Retention() { Stop(); }

void Retention::Stop() {
  absl::MutexLock stopping(&stop_mu_);  // a second Stop waits here for the first one's waits
  stopping_.store(true);  // the pass in progress ends after its removal in progress
  std::unique_ptr<PeriodicLoop> loop;
  {
    absl::MutexLock lock(&loop_mu_);
    loop = std::move(loop_);
  }
  // Outside loop_mu_ (a commit's Nudge takes it): waits for the loop's pass, then joins.
  loop.reset();
  // A pass another thread runs (RunOnce is public) holds pass_mu_ until it is done.
  absl::MutexLock passing(&pass_mu_);
}

void Retention::Nudge() {
  absl::MutexLock lock(&loop_mu_);
  if (loop_ != nullptr) loop_->Nudge();
}

void Retention::RunOnce() {
  absl::MutexLock passing(&pass_mu_);
  if (stopping_.load()) return;
  if (leads_ && !leads_()) return;
  const int64_t offset = cluster_clock_offset_ ? cluster_clock_offset_() : 0;
  if (offset != last_offset_) {
    if (offset != 0) {
      spdlog::warn("retention: this replica's clock is {} s {} the cluster's; profiles are aged on the cluster's "
                   "(check NTP)", std::llabs(offset) / 1'000'000'000, offset < 0 ? "ahead of" : "behind");
    }
    last_offset_ = offset;
  }
  const int64_t now = clock_->Now() + offset;
  ExpireByAge(now);
  EnforceDiskLimit();
  if (policy_.capture_retention_days > 0 && !stopping_.load()) {
    auto n = store_->captures().DeleteBefore(now - DaysToNs(policy_.capture_retention_days));
    if (n.ok() && *n > 0) {
      deleted_captures_.Increment(static_cast<double>(*n));
      spdlog::info("retention: removed {} captures older than {} days", *n, policy_.capture_retention_days);
    }
  }
  if (policy_.agent_expiry_days > 0 && !stopping_.load()) {
    const int n = agents_->ForgetDeparted(now - DaysToNs(policy_.agent_expiry_days));
    if (n > 0) {
      deleted_agents_.Increment(n);
      spdlog::info("retention: forgot {} agents not seen for {} days", n, policy_.agent_expiry_days);
    }
  }
}

bool Retention::Delete(const std::string& profile_id, prometheus::Counter& counter) {
  if (stopping_.load()) return false;  // Stop waits for the delete in progress, not the pass
  absl::Status s = delete_profile_(profile_id);
  if (!s.ok() && !absl::IsNotFound(s)) {
    spdlog::warn("retention: could not delete profile {}: {}", profile_id, std::string(s.message()));
    return false;
  }
  counter.Increment();
  return true;
}

void Retention::ExpireByAge(int64_t now) {
  // The shortest retention in force bounds how far the oldest-first walk must go.
  int64_t shortest = policy_.KeepNs("");
  for (const auto& [job, days] : policy_.job_days) {
    const int64_t keep = days > 0 ? DaysToNs(days) : 0;
    if (keep > 0 && (shortest == 0 || keep < shortest)) shortest = keep;
  }
  if (shortest == 0) return;
  std::vector<std::string> expired;
  absl::Status s = store_->profiles().ForEachOldestFirst([&](const v1::ProfileInfo& info) {
    if (now - info.ingested_at_ns() < shortest) return false;  // this one and all newer are kept
    const int64_t keep = policy_.KeepNs(info.job());
    if (keep > 0 && now - info.ingested_at_ns() >= keep) expired.push_back(info.profile_id());
    return true;
  });
  if (!s.ok()) spdlog::warn("retention: {}", std::string(s.message()));
  int deleted = 0;
  for (const std::string& id : expired) {
    if (stopping_.load()) break;
    deleted += Delete(id, deleted_age_) ? 1 : 0;
  }
  if (deleted > 0) spdlog::info("retention: removed {} profiles past their retention", deleted);
}

int64_t Retention::SettledDiskBytes() {
  StorageEngine& engine = store_->engine();
  if (absl::Status s = engine.Flush(); !s.ok()) spdlog::warn("retention: flush: {}", std::string(s.message()));
  engine.AwaitBackgroundWork();
  return engine.FolderBytes();
}

void Retention::EnforceDiskLimit() {
  const int64_t limit = policy_.max_disk_bytes;
  if (limit <= 0 || stopping_.load() || store_->engine().FolderBytes() <= limit) return;
  // Measured on what stays, not on what is passing through: memtables hold write-ahead logs
  // that a flush drops, and a running compaction has its inputs and outputs on disk at once.
  // Each deletion compacts its profile's ranges before the next measure (ProfileTable::Delete),
  // so no profile goes for space that compaction was about to give back.
  int64_t used = SettledDiskBytes();
  const int64_t before = used;
  int deleted = 0;
  bool only_newest_left = false;
  while (used > limit) {
    std::string oldest;
    int seen = 0;
    absl::Status s = store_->profiles().ForEachOldestFirst([&](const v1::ProfileInfo& info) {
      if (oldest.empty()) oldest = info.profile_id();
      return ++seen < 2;  // stop at the second: the newest profile always stays
    });
    if (!s.ok()) spdlog::warn("retention: {}", std::string(s.message()));
    only_newest_left = s.ok() && seen < 2;
    if (!s.ok() || seen < 2 || !Delete(oldest, deleted_disk_)) break;
    ++deleted;
    used = SettledDiskBytes();
  }
  if (deleted > 0) {
    spdlog::info("retention: removed the {} oldest profiles; --data_dir takes {} bytes on disk (was {}) of "
                 "--max_disk_mb {} MiB", deleted, used, before, limit >> 20);
  }
  if (only_newest_left) {
    spdlog::warn("retention: --data_dir takes {} bytes on disk, over --max_disk_mb {} MiB, with only its newest "
                 "profile left", used, limit >> 20);
  }
}

}  // namespace fleetprof
