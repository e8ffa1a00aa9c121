#include "collectors/job_owners.h"

#include <utility>

#include "collectors/process_jobs.h"
#include "spdlog/spdlog.h"

namespace fleetprof {
namespace {

// Names come from any process on the node: past this many, expired bindings are swept on
// the next claim, and the flagged set starts over (a conflict may then be logged again).
constexpr size_t kSweepAbove = 1024;
constexpr size_t kMaxFlagged = 4096;

}  // namespace

JobOwners::JobOwners(Clock::duration keep, std::function<void()> on_conflict)
    : keep_(keep), on_conflict_(std::move(on_conflict)) {}

bool JobOwners::Claim(const std::string& job, int64_t uid, int32_t pid) {
  if (job == kUnassignedJob) return true;
  if (uid < 0) return false;
  const Clock::time_point now = Clock::now();
  int64_t holder = -1;
  bool newly_flagged = false;
  {
    absl::MutexLock lock(&mu_);
    if (bindings_.size() > kSweepAbove) SweepLocked(now);
    auto [it, inserted] = bindings_.try_emplace(job, Binding{uid, now});
    Binding& binding = it->second;
    // The holder's processes stopped claiming it `keep` ago: the name is free again.
    if (!inserted && binding.uid != uid && now - binding.last_claim >= keep_) binding = Binding{uid, now};
    if (binding.uid == uid) {
      binding.last_claim = now;
      return true;
    }
    holder = binding.uid;
    if (flagged_.size() >= kMaxFlagged) flagged_.clear();
    newly_flagged = flagged_.emplace(job, uid, pid).second;
    if (newly_flagged) ++conflicts_;
  }
  if (newly_flagged) {
    spdlog::warn("pid {} of uid {} names itself part of job '{}', which belongs to uid {} on this node: "
                 "it is not a target of that job",
                 pid, uid, job, holder);
    if (on_conflict_) on_conflict_();
  }
  return false;
}

std::optional<int64_t> JobOwners::OwnerOf(const std::string& job) const {
  absl::MutexLock lock(&mu_);
  auto it = bindings_.find(job);
  if (it == bindings_.end() || Clock::now() - it->second.last_claim >= keep_) return std::nullopt;
  return it->second.uid;
}

int64_t JobOwners::conflicts() const {
  absl::MutexLock lock(&mu_);
  return conflicts_;
}

void JobOwners::SweepLocked(Clock::time_point now) {
  std::erase_if(bindings_, [&](const auto& entry) { return now - entry.second.last_claim >= keep_; });
}

}  // namespace fleetprof
