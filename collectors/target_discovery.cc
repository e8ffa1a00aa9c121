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

XprofTargetDiscovery::XprofTargetDiscovery(std::string proc_root, JobOwners* owners)
    : proc_root_(std::move(proc_root)), owners_(owners) {}

const XprofTargetDiscovery::Entry* XprofTargetDiscovery::Lookup(int pid) {
  absl::StatusOr<std::string> stat_text = ReadProcFile(absl::StrCat(proc_root_, "/", pid, "/stat"));
  if (!stat_text.ok()) return nullptr;
  const std::optional<ProcessStat> stat = ParseProcessStat(*stat_text);
  if (!stat.has_value()) return nullptr;
  auto it = cache_.find(pid);
  if (it == cache_.end() || it->second.start_ticks != stat->start_ticks || it->second.command != stat->command) {
    Entry entry{stat->start_ticks, stat->command, "", "", "", 0};
    ++environ_reads_;
    absl::StatusOr<std::string> environ = ReadProcessEnviron(proc_root_, pid);
    if (!environ.ok()) return nullptr;
    // The start time after the read as before: the environ read was this process's.
    if (ReadProcessStartTicks(proc_root_, pid) != stat->start_ticks) return nullptr;
    std::string job = EnvironValue(*environ, "FLEETPROF_JOB");
    std::string address = EnvironValue(*environ, "FLEETPROF_XPROF_ADDR");
    std::string session = EnvironValue(*environ, "FLEETPROF_NSYS_SESSION");
    // Both values come from any process on the node and end up in protos and in a session
    // folder name: refuse anything but a plain host:port and a printable UTF-8 job name.
    if (!job.empty() && !address.empty() && (!IsHostPort(address) || !IsPrintableUtf8(job, 253))) {
      WarnOnce(pid, absl::StrCat("ignoring pid ", pid, ": FLEETPROF_XPROF_ADDR must be HOST:PORT and FLEETPROF_JOB "
                                 "printable UTF-8 of at most 253 bytes (got address '", absl::CHexEscape(address),
                                 "', job '", absl::CHexEscape(job), "')"));
      address.clear();
    }
    // The session name reaches the command line of the nsys the agent runs: safe characters only.
    if (!job.empty() && !session.empty() && (!IsSafeFileName(session) || !IsPrintableUtf8(job, 253))) {
      WarnOnce(pid, absl::StrCat("ignoring pid ", pid, ": FLEETPROF_NSYS_SESSION must be 1 to 128 of A-Z a-z 0-9 . _ - "
                                 "(not starting with '.') and FLEETPROF_JOB printable UTF-8 of at most 253 bytes "
                                 "(got session '", absl::CHexEscape(session), "', job '", absl::CHexEscape(job), "')"));
      session.clear();
    }
    if (!job.empty() && (!address.empty() || !session.empty())) {
      entry.job = std::move(job);
      entry.address = std::move(address);
      entry.nsys_session = std::move(session);
    }
    it = cache_.insert_or_assign(pid, std::move(entry)).first;
  }
  it->second.scan = scan_;
  return &it->second;
}

std::vector<v1::Target> XprofTargetDiscovery::Scan() {
  ++scan_;
  std::vector<v1::Target> targets;
  std::set<std::tuple<v1::Target::Kind, std::string, int64_t, std::string>> seen;  // kind, address, uid, job
  DIR* dir = opendir(proc_root_.c_str());
  if (dir == nullptr) return targets;
  std::vector<int> pids;
  while (dirent* entry = readdir(dir)) {
    int pid = 0;
    if (absl::SimpleAtoi(entry->d_name, &pid) && pid > 0) pids.push_back(pid);
  }
  closedir(dir);
  std::sort(pids.begin(), pids.end());  // parents (lower pids, usually) first
  for (int pid : pids) {
    const Entry* entry = Lookup(pid);
    if (entry == nullptr || entry->job.empty()) continue;
    // The start time after the uid is read as before it: the same, the uid is this process's
    // (a pid is not reused while its process lives).
    const int64_t uid = ProcessUid(proc_root_, pid);
    if (uid < 0 || ReadProcessStartTicks(proc_root_, pid) != entry->start_ticks) continue;
    if (!owners_->Claim(entry->job, uid, pid)) continue;  // another uid's job: JobOwners logged it
    // An XLA job under an nsys session is a target of each kind.
    for (const auto& [kind, address] : {std::pair{v1::Target::xprof, &entry->address},
                                        std::pair{v1::Target::nsys, &entry->nsys_session}}) {
      if (address->empty() || !seen.emplace(kind, *address, uid, entry->job).second) continue;
      v1::Target target;
      target.set_job(entry->job);
      target.set_kind(kind);
      target.set_pid(pid);
      target.set_address(*address);
      target.set_start_ticks(entry->start_ticks);
      targets.push_back(std::move(target));
    }
  }
  // Processes gone since the last scan are forgotten: the cache holds the live ones only.
  std::erase_if(cache_, [this](const auto& item) { return item.second.scan != scan_; });
  return targets;
}

}  // namespace fleetprof
