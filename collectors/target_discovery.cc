#include "collectors/target_discovery.h"

#include <dirent.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <tuple>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/escaping.h"
#include "collectors/process_jobs.h"
#include "absl/synchronization/mutex.h"
#include "common/safe_paths.h"
#include "common/text_checks.h"
#include "spdlog/spdlog.h"

namespace fleetprof {

absl::StatusOr<v1::Target> ParseTargetFlag(const std::string& flag) {
  v1::Target target;
  for (absl::string_view part : absl::StrSplit(flag, ',')) {
    std::pair<std::string, std::string> kv = absl::StrSplit(part, absl::MaxSplits('=', 1));
    if (kv.first == "job") {
      target.set_job(kv.second);
    } else if (kv.first == "xprof") {
      target.set_kind(v1::Target::xprof);
      target.set_address(kv.second);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("--target ", flag, ": unknown key '", kv.first, "' (want job=J,xprof=HOST:PORT)"));
    }
  }
  if (target.job().empty() || !IsPrintableUtf8(target.job(), 253) || !IsHostPort(target.address())) {
    return absl::InvalidArgumentError(absl::StrCat("--target ", flag, ": want job=J,xprof=HOST:PORT"));
  }
  return target;
}

std::string EnvironValue(const std::string& environ, const std::string& name) {
  const std::string prefix = name + "=";
  for (absl::string_view entry : absl::StrSplit(environ, '\0')) {
    if (entry.substr(0, prefix.size()) == prefix) return std::string(entry.substr(prefix.size()));
  }
  return "";
}

namespace {

ABSL_CONST_INIT absl::Mutex warned_mu(absl::kConstInit);
std::set<int>& Warned() ABSL_EXCLUSIVE_LOCKS_REQUIRED(warned_mu) {
  static auto* warned = new std::set<int>();
  return *warned;
}

// Discovery runs every few seconds: say why a process is ignored once, not every scan.
void WarnOnce(int pid, const std::string& message) {
  absl::MutexLock lock(&warned_mu);
  std::set<int>& warned = Warned();
  if (warned.size() > 4096) warned.clear();
  if (warned.insert(pid).second) spdlog::warn("{}", message);
}

}  // namespace

std::vector<v1::Target> DiscoverXprofTargets(const std::string& proc_root, JobOwners& owners) {
  std::vector<v1::Target> targets;
  std::set<std::tuple<std::string, int64_t, std::string>> seen;  // address, uid, job
  DIR* dir = opendir(proc_root.c_str());
  if (dir == nullptr) return targets;
  std::vector<int> pids;
  while (dirent* entry = readdir(dir)) {
    int pid = 0;
    if (absl::SimpleAtoi(entry->d_name, &pid) && pid > 0) pids.push_back(pid);
  }
  closedir(dir);
  std::sort(pids.begin(), pids.end());  // parents (lower pids, usually) first
  for (int pid : pids) {
    // The start time before and after environ and uid are read: the same on both sides, they
    // are one process's (a pid is not reused while its process lives).
    const std::optional<uint64_t> start_ticks = ReadProcessStartTicks(proc_root, pid);
    if (!start_ticks.has_value()) continue;
    auto environ = ReadProcFile(absl::StrCat(proc_root, "/", pid, "/environ"));
    if (!environ.ok()) continue;
    std::string job = EnvironValue(*environ, "FLEETPROF_JOB");
    std::string address = EnvironValue(*environ, "FLEETPROF_XPROF_ADDR");
    if (job.empty() || address.empty()) continue;
    // Both values come from any process on the node and end up in protos and in a session
    // folder name: refuse anything but a plain host:port and a printable UTF-8 job name.
    if (!IsHostPort(address) || !IsPrintableUtf8(job, 253)) {
      WarnOnce(pid, absl::StrCat("ignoring pid ", pid, ": FLEETPROF_XPROF_ADDR must be HOST:PORT and FLEETPROF_JOB "
                                 "printable UTF-8 of at most 253 bytes (got address '", absl::CHexEscape(address),
                                 "', job '", absl::CHexEscape(job), "')"));
      continue;
    }
    const int64_t uid = ProcessUid(proc_root, pid);
    if (uid < 0 || ReadProcessStartTicks(proc_root, pid) != start_ticks) continue;
    if (!owners.Claim(job, uid, pid)) continue;  // another uid's job: JobOwners logged it
    if (!seen.emplace(address, uid, job).second) continue;
    v1::Target target;
    target.set_job(job);
    target.set_kind(v1::Target::xprof);
    target.set_pid(pid);
    target.set_address(address);
    target.set_start_ticks(*start_ticks);
    targets.push_back(std::move(target));
  }
  return targets;
}

}  // namespace fleetprof
