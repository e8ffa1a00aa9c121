#pragma once
// The node's Nsight Systems CLI (the agent's --nsys): the three commands the agent runs with it,
// each as the user whose job or report it is (collectors/command_runner.h), never as root:
//   nsys start --session=NAME --output=REPORT.nsys-rep   (a session made by `nsys launch --session-new=NAME`)
//   nsys stop --session=NAME                              (writes REPORT.nsys-rep)
//   nsys export --type sqlite --output FILE.sqlite REPORT (what fleetprof reads: format nsys_sqlite)
// An agent without --nsys has an empty NsysCli: each call fails with kNoNsysReason.

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "collectors/command_runner.h"
#include "common/safe_paths.h"

namespace fleetprof {

// Why a report cannot be turned into SQLite here, in words a user acts on.
inline constexpr char kNoNsysReason[] =
    "this agent has no nsys to export .nsys-rep reports with: install Nsight Systems on the node and start "
    "fleetprof-agent with --nsys=PATH, or run `nsys export --type sqlite REPORT.nsys-rep` first and upload the "
    ".sqlite file";

// Whom a command runs as: a job's or a report owner's uid and gid, and the home it gets.
struct NsysUser {
  int64_t uid = -1;
  int64_t gid = -1;
  std::string home;  // $HOME (the passwd entry's; "/" when the uid has none)
};

// OK when `path` may serve as the node's nsys: an absolute path to an executable regular file
// owned by root (or this process's user) that neither group nor others may write, since the
// agent runs it as every job's user. The error says which rule it breaks.
absl::Status CheckNsysProgram(const std::string& path);

// The user owning uid: its passwd entry's primary gid and home (gid 65534, home "/", when
// the uid has no entry: a job's gid comes from its process instead, NsysUserOfProcess).
NsysUser NsysUserOf(int64_t uid);
// The user process `pid` runs as (its real uid and gid in `proc_root`/PID/status); NotFound
// when the process is gone.
absl::StatusOr<NsysUser> NsysUserOfProcess(const std::string& proc_root, int32_t pid);

class NsysCli {
 public:
  static constexpr int64_t kSessionTimeoutMs = 30'000;  // start, stop
  static constexpr int64_t kExportTimeoutMs = 120'000;  // export: then killed

  NsysCli() = default;  // no nsys on this node
  // `nsys`: the program's absolute path (empty: none); `run` runs it (RunCommand in the daemon).
  NsysCli(std::string nsys, CommandRunner run) : nsys_(std::move(nsys)), run_(std::move(run)) {}

  bool available() const { return !nsys_.empty() && run_ != nullptr; }
  const std::string& path() const { return nsys_; }

  // `nsys start --session=SESSION --output=REPORT` as `user`, in `folder` (REPORT's).
  absl::Status Start(const std::string& session, const std::string& report, const std::string& folder,
                     const NsysUser& user, const std::function<bool()>& cancelled) const;
  // `nsys stop --session=SESSION` as `user`: the report Start named is written.
  absl::Status Stop(const std::string& session, const std::string& folder, const NsysUser& user) const;
  // `nsys export --type sqlite --output SQLITE REPORT` as `user` in `folder` (SQLITE's), within
  // kExportTimeoutMs and `max_bytes` for any file it writes (RLIMIT_FSIZE).
  absl::Status Export(const std::string& report, const std::string& sqlite, const std::string& folder,
                      const NsysUser& user, int64_t max_bytes, const std::function<bool()>& cancelled) const;
  // Export() into `root`/`folder`/`name`, then that file opened as CheckedFile does beneath
  // `root` (no link followed, a plain file of user.uid's) and no larger than `max_bytes`. What
  // a failed export left there is removed.
  absl::StatusOr<CheckedFile> ExportAndOpen(const std::string& report, const std::string& root,
                                            const std::string& folder, const std::string& name, const NsysUser& user,
                                            int64_t max_bytes, const std::function<bool()>& cancelled) const;

 private:
  // Runs `nsys ARGS…` as `user`; the error names the command and says how it ended.
  absl::Status Run(std::vector<std::string> args, const std::string& folder, const NsysUser& user,
                   int64_t timeout_ms, int64_t max_bytes, const std::function<bool()>& cancelled) const;

  std::string nsys_;
  CommandRunner run_;
};

// Removes the plain files and links directly inside `root`/`folder` (never following a link,
// never descending), then the folder itself: what an export left in its private folder. Quiet
// when something stays (a folder its user made inside): the error says what.
absl::Status RemoveExportFolder(const std::string& root, const std::string& folder);

}  // namespace fleetprof
