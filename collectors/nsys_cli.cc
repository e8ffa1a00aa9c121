#include "collectors/nsys_cli.h"

#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/safe_paths.h"

namespace fleetprof {
namespace {

constexpr int64_t kNoGroup = 65534;

}  // namespace

absl::Status CheckNsysProgram(const std::string& path) {
  if (path.empty() || path[0] != '/') return absl::InvalidArgumentError(absl::StrCat(path, ": want an absolute path"));
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat(path, ": ", std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode) || (st.st_mode & 0111) == 0) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not an executable file"));
  }
  if ((st.st_uid != 0 && st.st_uid != ::geteuid()) || (st.st_mode & 022) != 0) {
    return absl::PermissionDeniedError(absl::StrCat(
        path, ": must be root's and not group/other-writable (the agent runs it as every job's user: whoever may "
              "change it would run code as them)"));
  }
  return absl::OkStatus();
}

NsysUser NsysUserOf(int64_t uid) {
  NsysUser user{uid, kNoGroup, "/"};
  passwd entry{};
  passwd* found = nullptr;
  std::vector<char> buffer(16 << 10);
  if (::getpwuid_r(static_cast<uid_t>(uid), &entry, buffer.data(), buffer.size(), &found) == 0 && found != nullptr) {
    user.gid = found->pw_gid;
    if (found->pw_dir != nullptr && found->pw_dir[0] == '/') user.home = found->pw_dir;
  }
  return user;
}

absl::StatusOr<NsysUser> NsysUserOfProcess(const std::string& proc_root, int32_t pid) {
  const std::vector<int64_t> uids = ProcStatusNumbers(proc_root, pid, "Uid");
  const std::vector<int64_t> gids = ProcStatusNumbers(proc_root, pid, "Gid");
  if (uids.empty() || gids.empty()) return absl::NotFoundError(absl::StrCat("pid ", pid, " is gone"));
  NsysUser user = NsysUserOf(uids[0]);
  user.gid = gids[0];  // the job's own, whatever the passwd entry says
  return user;
}

absl::Status NsysCli::Run(std::vector<std::string> args, const std::string& folder, const NsysUser& user,
                          int64_t timeout_ms, int64_t max_bytes, const std::function<bool()>& cancelled) const {
  if (!available()) return absl::FailedPreconditionError(kNoNsysReason);
  const std::string shown = absl::StrCat("nsys ", absl::StrJoin(args, " "));
  CommandSpec spec;
  spec.argv.push_back(nsys_);
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  // Nothing of the agent's environment: a plain PATH for the tools nsys runs, the user's home
  // (nsys keeps its settings there).
  spec.env = {"PATH=/usr/local/bin:/usr/bin:/bin", absl::StrCat("HOME=", user.home), "LC_ALL=C"};
  spec.uid = user.uid;
  spec.gid = user.gid;
  spec.cwd = folder;
  spec.timeout_ms = timeout_ms;
  spec.max_file_bytes = max_bytes;
  spec.cancelled = cancelled;
  absl::StatusOr<CommandOutcome> outcome = run_(spec);
  if (!outcome.ok()) return outcome.status();
  if (outcome->ok()) return absl::OkStatus();
  std::string why = outcome->Describe();
  if (outcome->timed_out) absl::StrAppend(&why, " (", timeout_ms, " ms)");
  if (max_bytes > 0 && outcome->signal == SIGXFSZ) absl::StrAppend(&why, " (", max_bytes >> 20, " MiB, --max_trace_mb)");
  if (outcome->cancelled) return absl::CancelledError(absl::StrCat(shown, ": ", why));
  return absl::FailedPreconditionError(absl::StrCat(shown, " as uid ", user.uid, " failed: ", why));
}

absl::Status NsysCli::Start(const std::string& session, const std::string& report, const std::string& folder,
                            const NsysUser& user, const std::function<bool()>& cancelled) const {
  return Run({absl::StrCat("start"), absl::StrCat("--session=", session), absl::StrCat("--output=", report)}, folder,
             user, kSessionTimeoutMs, 0, cancelled);
}

absl::Status NsysCli::Stop(const std::string& session, const std::string& folder, const NsysUser& user) const {
  // Not cancellable: a session started is always stopped, or it would trace on.
  return Run({"stop", absl::StrCat("--session=", session)}, folder, user, kSessionTimeoutMs, 0, nullptr);
}

absl::Status NsysCli::Export(const std::string& report, const std::string& sqlite, const std::string& folder,
                             const NsysUser& user, int64_t max_bytes, const std::function<bool()>& cancelled) const {
  return Run({"export", "--type", "sqlite", "--output", sqlite, report}, folder, user, kExportTimeoutMs, max_bytes,
             cancelled);
}

absl::StatusOr<CheckedFile> NsysCli::ExportAndOpen(const std::string& report, const std::string& root,
                                                   const std::string& folder, const std::string& name,
                                                   const NsysUser& user, int64_t max_bytes,
                                                   const std::function<bool()>& cancelled) const {
  const std::string dir = absl::StrCat(root, "/", folder);
  const std::string beneath = absl::StrCat(folder, "/", name);
  absl::Status exported = Export(report, absl::StrCat(dir, "/", name), dir, user, max_bytes, cancelled);
  absl::StatusOr<CheckedFile> sqlite = CheckedFile::OpenBeneath(root, beneath, {user.uid});
  if (exported.ok() && !sqlite.ok()) {
    exported = absl::FailedPreconditionError(
        absl::StrCat("nsys export ended well but left no SQLite file to read: ", sqlite.status().message()));
  }
  if (exported.ok() && sqlite->size_bytes() > max_bytes) {
    exported = absl::ResourceExhaustedError(absl::StrCat("the SQLite export is ", sqlite->size_bytes(),
                                                         " bytes, more than this agent takes (--max_trace_mb=",
                                                         max_bytes >> 20, ")"));
  }
  if (exported.ok()) return sqlite;
  if (sqlite.ok()) (void)sqlite->RemoveName();  // half an export, or one too large
  return exported;
}

absl::Status RemoveExportFolder(const std::string& root, const std::string& folder) {
  if (!IsSafeFileName(folder)) return absl::InvalidArgumentError(absl::StrCat("not an export folder: ", folder));
  const int parent = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (parent < 0) return absl::FailedPreconditionError(absl::StrCat("cannot open ", root, ": ", std::strerror(errno)));
  const int fd = ::openat(parent, folder.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    ::close(parent);
    return err == ENOENT ? absl::OkStatus()
                         : absl::FailedPreconditionError(
                               absl::StrCat("cannot open ", root, "/", folder, ": ", std::strerror(err)));
  }
  DIR* dir = ::fdopendir(fd);
  std::vector<std::string> names;
  if (dir != nullptr) {
    while (dirent* entry = ::readdir(dir)) {
      const std::string name = entry->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
  }
  // unlinkat never follows a link: a link the folder's user made is removed, not its target.
  for (const std::string& name : names) ::unlinkat(dir != nullptr ? ::dirfd(dir) : fd, name.c_str(), 0);
  if (dir != nullptr) {
    ::closedir(dir);
  } else {
    ::close(fd);
  }
  const int removed = ::unlinkat(parent, folder.c_str(), AT_REMOVEDIR);
  const int err = errno;
  ::close(parent);
  if (removed != 0) {
    return absl::FailedPreconditionError(absl::StrCat("cannot remove ", root, "/", folder, ": ", std::strerror(err)));
  }
  return absl::OkStatus();
}

}  // namespace fleetprof
