#pragma once
// Paths the agent (running as root) builds from values other processes chose: environment
// variables, dynolog requests, Kineto configs, capture ids. Every such path goes through
// here, so a "../", a "/", a NUL byte or a symlink can never point outside the agent's own
// folders, and a file is read only when it belongs to the process that was traced.

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace fleetprof {

// 1..128 characters of A-Z a-z 0-9 . _ -, not starting with '.': safe as one path component.
bool IsSafeFileName(std::string_view name);

// `text` made into a safe file name: every other byte becomes '_', cut to 128 characters,
// a leading '.' replaced. Never empty ("_" for empty input).
std::string SafeFileName(std::string_view text);

// The path of a file directly inside `dir` that `candidate` names, when `candidate` is an
// absolute path whose parent is `dir` (after removing "." and duplicate slashes) and whose
// file name is safe; INVALID_ARGUMENT naming the rule otherwise. No ".." is accepted.
absl::StatusOr<std::string> FileDirectlyIn(const std::string& dir, std::string_view candidate);

// Creates `dir` (and missing parents) as a folder that jobs of any user can write into but
// not list, where nobody may delete another's files (mode 1733, owned by this process), or
// checks that an existing one is exactly that: a pre-created folder of another user or a
// symlink is refused, since its owner could swap files under us.
absl::Status EnsureSharedDropFolder(const std::string& dir);

// Creates `dir` (and missing parents) as a daemon's own state folder: mode 0700, so stored
// profiles, journals and secrets are not readable by other local users. An existing folder
// is left as the operator made it (a group may be meant to read it); when other users can
// enter it, `warning` says so and how to close it. A symlink or a non-folder is refused.
absl::Status EnsureOwnStateFolder(const std::string& dir, std::string* warning);

// Creates a folder directly inside `shared_dir` (normally an EnsureSharedDropFolder) that
// only `uid` may enter: mode 0700, owned by `uid`, named `prefix` + "-" + random hex, so no
// other user can have created or guessed it first. Returns its name (one path component).
absl::StatusOr<std::string> CreatePrivateFolder(const std::string& shared_dir, const std::string& prefix, int64_t uid);

// A file another process wrote, opened for reading without following a link and checked on
// the open descriptor: a regular file with one link, owned by one of the allowed uids. A
// rename or symlink swapped in after the check cannot change what is read, since readers
// go through proc_path() (/proc/self/fd/N: the open file itself).
class CheckedFile {
 public:
  // `owners`: the uids that may own it; empty accepts any owner (links are still refused).
  static absl::StatusOr<CheckedFile> Open(const std::string& path, const std::vector<int64_t>& owners);
  // A file at `relative` beneath the folder `root`, reached one component at a time, each
  // opened with O_NOFOLLOW from the descriptor of the folder above: a folder swapped for a
  // symlink between a scan and this open (renameat2 RENAME_EXCHANGE) is refused, never
  // followed, and ".." or an absolute `relative` is refused. `root` itself is the operator's
  // choice and may be a link. With no `owners` to match (a watched folder: whose job wrote
  // it is unknown), a file owned by this process's own user (root, for the agent) is refused
  // when any folder on the way, `root` included, is writable by another user: it is the one
  // kind of file a job must never make us upload, and not one a job of another user writes.
  static absl::StatusOr<CheckedFile> OpenBeneath(const std::string& root, const std::string& relative,
                                                 const std::vector<int64_t>& owners);
  CheckedFile(CheckedFile&& other) noexcept;
  CheckedFile& operator=(CheckedFile&& other) noexcept;
  ~CheckedFile();

  const std::string& path() const { return path_; }  // as named when opened
  int64_t owner_uid() const { return owner_uid_; }
  int64_t size_bytes() const { return size_bytes_; }  // when it was opened
  std::string proc_path() const;                     // the open file, for readers that take a path
  // Removes the name the file was opened by, when it still names this file (never what was
  // renamed over it since). Through the folder's own descriptor after OpenBeneath(), so a
  // folder swapped for a link since cannot point the unlink elsewhere.
  absl::Status RemoveName() const;

 private:
  CheckedFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  // The checks both opens share, on the open descriptor.
  static absl::StatusOr<CheckedFile> Check(std::string path, int fd, const std::vector<int64_t>& owners);
  std::string path_;
  int fd_ = -1;
  int64_t owner_uid_ = -1;
  int64_t size_bytes_ = 0;
  int folder_fd_ = -1;     // OpenBeneath(): the folder holding the file
  std::string leaf_name_;  // OpenBeneath(): the file's name in that folder
};

// The numbers on the `key:` line of `proc_root`/`pid`/status ("Uid", "NSpid", …); empty
// when the process or the line is missing or malformed.
std::vector<int64_t> ProcStatusNumbers(const std::string& proc_root, int32_t pid, std::string_view key);
// The real uid of process `pid` under `proc_root`, -1 if unreadable.
int64_t ProcessUid(const std::string& proc_root, int32_t pid);
// True when process `pid` sees the files this process sees: the same mount namespace and the
// same root (not in a container, not chrooted), so a path it writes is the path we read.
bool SharesOurFilesystem(const std::string& proc_root, int32_t pid);

}  // namespace fleetprof
