#include "collectors/job_owners.h"

#include <sys/stat.h>

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "collectors/process_jobs.h"
#include "common/operator_file.h"
#include "common/text_checks.h"
#include "spdlog/spdlog.h"

namespace fleetprof {
namespace {

// Names come from any process on the node: past this many, expired bindings are swept on
// the next claim, and the flagged set starts over (a conflict may then be logged again).
constexpr size_t kSweepAbove = 1024;
constexpr size_t kMaxFlagged = 4096;
constexpr int64_t kRootUid = 0;
constexpr int64_t kMaxUid = 4294967294;  // (uid_t)-1 means "no uid"
constexpr std::chrono::seconds kReloadEvery(1);

// What tells one version of the file from the next: a rename over it (a new inode) or an
// edit in place (size, mtime, ctime).
std::string FileSignature(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "missing";
  return absl::StrCat(st.st_dev, ":", st.st_ino, ":", st.st_size, ":", st.st_mtim.tv_sec, ".", st.st_mtim.tv_nsec,
                      ":", st.st_ctim.tv_sec, ".", st.st_ctim.tv_nsec);
}

// "UID JOB" per line (the job name is the rest of the line, spaces and all); blank lines and
// lines that start with '#' say nothing. A job listed twice is an error, never a guess.
absl::StatusOr<std::map<std::string, int64_t>> ParseAssignments(const std::string& path, std::string_view text) {
  std::map<std::string, int64_t> assigned;
  std::map<std::string, int> line_of;
  int number = 0;
  for (absl::string_view line : absl::StrSplit(absl::string_view(text.data(), text.size()), '\n')) {
    ++number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line.front() == '#') continue;
    const std::string where = absl::StrCat("job owners file ", path, ", line ", number, ": ");
    const size_t space = line.find_first_of(" \t");
    int64_t uid = -1;
    if (space == absl::string_view::npos || !absl::SimpleAtoi(line.substr(0, space), &uid) || uid < 0 ||
        uid > kMaxUid) {
      return absl::InvalidArgumentError(absl::StrCat(where, "expected \"UID JOB\" with a numeric uid"));
    }
    const std::string job(absl::StripAsciiWhitespace(line.substr(space)));
    if (!IsPrintableUtf8(job, 253) || job == kUnassignedJob) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "a job name is printable UTF-8 of at most 253 bytes, and not \"", std::string(kUnassignedJob), "\""));
    }
    if (auto [it, inserted] = line_of.emplace(job, number); !inserted) {
      return absl::InvalidArgumentError(absl::StrCat(where, "job '", job, "' is already given to a uid on line ", it->second));
    }
    assigned.emplace(job, uid);
  }
  return assigned;
}

}  // namespace

JobOwners::JobOwners(std::chrono::nanoseconds keep, std::function<void()> on_conflict, std::string assignments_file,
                     const Clock* clock)
    : clock_(*clock),
      keep_ns_(keep.count()),
      on_conflict_(std::move(on_conflict)),
      assignments_file_(std::move(assignments_file)) {}

absl::Status JobOwners::LoadAssignments() {
  if (assignments_file_.empty()) return absl::OkStatus();
  const std::string signature = FileSignature(assignments_file_);
  absl::StatusOr<std::map<std::string, int64_t>> assigned;
  absl::StatusOr<std::string> text = ReadOperatorFile({.what = "job owners file"}, assignments_file_);
  if (text.ok()) {
    assigned = ParseAssignments(assignments_file_, *text);
  } else {
    assigned = text.status();
  }
  absl::MutexLock lock(&mu_);
  file_signature_ = signature;
  if (!assigned.ok()) return assigned.status();
  assigned_ = *std::move(assigned);
  return absl::OkStatus();
}

void JobOwners::MaybeReload(int64_t now_ns) {
  if (assignments_file_.empty()) return;
  {
    absl::MutexLock lock(&mu_);
    if (now_ns < next_reload_ns_) return;
    next_reload_ns_ = now_ns + std::chrono::nanoseconds(kReloadEvery).count();
  }
  const std::string signature = FileSignature(assignments_file_);
  {
    absl::MutexLock lock(&mu_);
    if (signature == file_signature_) return;
  }
  if (absl::Status s = LoadAssignments(); !s.ok()) {
    spdlog::error("{}; the job owners read before stay in force", std::string(s.message()));
    return;
  }
  absl::MutexLock lock(&mu_);
  spdlog::info("job owners file {}: {} job names assigned", assignments_file_, assigned_.size());
}

bool JobOwners::MayHoldLocked(const std::string& job, int64_t uid, int64_t now_ns, int64_t* holder) {
  if (auto assigned = assigned_.find(job); assigned != assigned_.end()) {
    *holder = assigned->second;
    return uid == assigned->second || uid == kRootUid;
  }
  if (bindings_.size() > kSweepAbove) SweepLocked(now_ns);
  auto [it, inserted] = bindings_.try_emplace(job, Binding{uid, now_ns});
  Binding& binding = it->second;
  // The holder's processes stopped claiming it `keep` ago, or root claims it: it is uid's now.
  if (!inserted && binding.uid != uid && (now_ns - binding.last_claim_ns >= keep_ns_ || uid == kRootUid)) {
    binding = Binding{uid, now_ns};
  }
  if (binding.uid == uid) {
    binding.last_claim_ns = now_ns;
    return true;
  }
  *holder = binding.uid;
  return false;
}

bool JobOwners::Claim(const std::string& job, int64_t uid, int32_t pid) {
  if (job == kUnassignedJob) return true;
  if (uid < 0) return false;
  const int64_t now_ns = clock_.MonotonicNanos();
  MaybeReload(now_ns);
  int64_t holder = -1;
  bool newly_flagged = false;
  {
    absl::MutexLock lock(&mu_);
    if (MayHoldLocked(job, uid, now_ns, &holder)) return true;
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

bool JobOwners::MayUse(const std::string& job, int64_t uid) {
  if (uid < 0) return false;
  MaybeReload(clock_.MonotonicNanos());
  absl::MutexLock lock(&mu_);
  auto assigned = assigned_.find(job);
  return assigned == assigned_.end() || uid == assigned->second || uid == kRootUid;
}

std::optional<int64_t> JobOwners::OwnerOf(const std::string& job) const {
  absl::MutexLock lock(&mu_);
  if (auto assigned = assigned_.find(job); assigned != assigned_.end()) return assigned->second;
  auto it = bindings_.find(job);
  if (it == bindings_.end() || clock_.MonotonicNanos() - it->second.last_claim_ns >= keep_ns_) return std::nullopt;
  return it->second.uid;
}

int64_t JobOwners::conflicts() const {
  absl::MutexLock lock(&mu_);
  return conflicts_;
}

void JobOwners::SweepLocked(int64_t now_ns) {
  std::erase_if(bindings_, [&](const auto& entry) { return now_ns - entry.second.last_claim_ns >= keep_ns_; });
}

}  // namespace fleetprof
