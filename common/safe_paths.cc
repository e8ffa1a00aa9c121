#include "common/safe_paths.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "common/runtime.h"

namespace fleetprof {
namespace {

constexpr size_t kMaxNameLength = 128;

bool IsNameChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
}

}  // namespace

bool IsSafeFileName(std::string_view name) {
  if (name.empty() || name.size() > kMaxNameLength || name.front() == '.') return false;
  for (char c : name) {
    if (!IsNameChar(c)) return false;
  }
  return true;
}

std::string SafeFileName(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, kMaxNameLength)) out.push_back(IsNameChar(c) ? c : '_');
  if (out.empty()) return "_";
  if (out.front() == '.') out.front() = '_';
  return out;
}

absl::StatusOr<std::string> FileDirectlyIn(const std::string& dir, std::string_view candidate) {
  if (candidate.find('\0') != std::string_view::npos) {
    return absl::InvalidArgumentError("the path holds a NUL byte");
  }
  const std::filesystem::path path = std::filesystem::path(std::string(candidate)).lexically_normal();
  const std::filesystem::path folder = std::filesystem::path(dir).lexically_normal();
  for (const auto& part : std::filesystem::path(std::string(candidate))) {
    if (part == "..") return absl::InvalidArgumentError(absl::StrCat("'", std::string(candidate), "' holds '..'"));
  }
  if (!path.is_absolute() || path.parent_path() != folder) {
    return absl::InvalidArgumentError(absl::StrCat("'", std::string(candidate), "' is not a file directly in ", dir));
  }
  if (!IsSafeFileName(path.filename().string())) {
    return absl::InvalidArgumentError(absl::StrCat("'", path.filename().string(),
                                                   "' is not a plain file name (A-Z a-z 0-9 . _ -)"));
  }
  return path.string();
}

absl::Status EnsureOwnStateFolder(const std::string& dir, std::string* warning) {
  const std::filesystem::path path = std::filesystem::absolute(dir).lexically_normal();
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  const bool created = ::mkdir(path.c_str(), 0700) == 0;
  if (!created && errno != EEXIST) {
    return absl::FailedPreconditionError(absl::StrCat("cannot create ", path.string(), ": ", std::strerror(errno)));
  }
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(path.string(), " is not a folder"));
  }
  if (!created && (st.st_mode & (S_IRWXG | S_IRWXO)) != 0 && warning != nullptr) {
    *warning = absl::StrFormat(
        "%s has mode %04o: other local users can read what is stored in it; chmod 700 it unless that is meant",
        path.string(), st.st_mode & 07777);
  }
  return absl::OkStatus();
}

absl::Status EnsureSharedDropFolder(const std::string& dir) {
  const std::filesystem::path path = std::filesystem::absolute(dir).lexically_normal();
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  // Every folder above must be safe from other users too: one they may write (without the
  // sticky bit, as /tmp has) would let them rename ours away and put theirs in its place.
  for (std::filesystem::path above = path.parent_path(); !above.empty(); above = above.parent_path()) {
    struct stat st {};
    if (::lstat(above.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return absl::FailedPreconditionError(absl::StrCat(above.string(), " is not a folder (a symlink?)"));
    }
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (st.st_mode & S_ISVTX) == 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          above.string(), " is writable by other users without the sticky bit, so ", path.string(),
          " could be replaced under the agent; choose another --kineto_trace_dir"));
    }
    if (above == above.parent_path()) break;
  }
  if (::mkdir(path.c_str(), 01733) != 0 && errno != EEXIST) {
    return absl::FailedPreconditionError(absl::StrCat("cannot create ", path.string(), ": ", std::strerror(errno)));
  }
  // Checked and changed through one descriptor opened without following a link.
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    return absl::FailedPreconditionError(absl::StrCat(path.string(), " is not a folder (a symlink?): ",
                                                      std::strerror(errno), "; remove it or choose another"));
  }
  struct stat st {};
  absl::Status result = absl::OkStatus();
  if (::fstat(fd, &st) != 0) {
    result = absl::FailedPreconditionError(absl::StrCat("cannot stat ", path.string(), ": ", std::strerror(errno)));
  } else if (st.st_uid != ::geteuid()) {
    result = absl::FailedPreconditionError(absl::StrCat(
        path.string(), " belongs to uid ", st.st_uid, ", not to this agent (uid ", ::geteuid(),
        "): someone created it first; remove it or choose another folder"));
  } else if ((st.st_mode & 07777) != 01733 && ::fchmod(fd, 01733) != 0) {  // mkdir's mode passed the umask
    result = absl::FailedPreconditionError(absl::StrCat("cannot chmod 1733 ", path.string(), ": ", std::strerror(errno)));
  }
  ::close(fd);
  return result;
}

namespace {

absl::Status OpenError(const std::string& path, int err) {
  if (err == ELOOP) return absl::PermissionDeniedError(absl::StrCat(path, " is a symlink"));
  if (err == ENOENT) return absl::NotFoundError(absl::StrCat("cannot open ", path, ": ", std::strerror(err)));
  return absl::PermissionDeniedError(absl::StrCat("cannot open ", path, ": ", std::strerror(err)));
}

// Another user than `self` (and root) could create, rename or replace entries in this folder.
bool WritableByOthers(const struct stat& folder, uid_t self) {
  if ((folder.st_mode & (S_IWGRP | S_IWOTH)) != 0) return true;
  return folder.st_uid != self && folder.st_uid != 0;
}

// O_NONBLOCK: a FIFO planted under the name must not hang us; O_NOFOLLOW: nor a link.
constexpr int kFileFlags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;

}  // namespace

absl::StatusOr<CheckedFile> CheckedFile::Open(const std::string& path, const std::vector<int64_t>& owners) {
  const int fd = ::open(path.c_str(), kFileFlags);
  if (fd < 0) return OpenError(path, errno);
  return Check(path, fd, owners);
}

absl::StatusOr<CheckedFile> CheckedFile::OpenBeneath(const std::string& root, const std::string& relative,
                                                     const std::vector<int64_t>& owners) {
  const std::string shown = absl::StrCat(root, "/", relative);
  std::vector<std::string> parts;
  for (absl::string_view part : absl::StrSplit(relative, '/', absl::SkipEmpty())) {
    if (part == ".") continue;
    if (part == "..") return absl::PermissionDeniedError(absl::StrCat(shown, " holds '..'"));
    parts.emplace_back(part);
  }
  if (relative.empty() || relative.front() == '/' || parts.empty() || relative.find('\0') != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("'", absl::CHexEscape(relative), "' is not a relative file path"));
  }
  int dir = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return OpenError(root, errno);
  const uid_t self = ::geteuid();
  bool others_may_write = false;
  for (size_t i = 0; i < parts.size(); ++i) {
    struct stat folder {};
    if (::fstat(dir, &folder) != 0) {
      const int err = errno;
      ::close(dir);
      return OpenError(shown, err);
    }
    others_may_write = others_may_write || WritableByOthers(folder, self);
    const bool last = i + 1 == parts.size();
    const int next = ::openat(dir, parts[i].c_str(), last ? kFileFlags : O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    const int err = errno;
    if (last && next >= 0) {
      absl::StatusOr<CheckedFile> file = Check(shown, next, owners);
      if (!file.ok()) {
        ::close(dir);
        return file.status();
      }
      file->folder_fd_ = dir;
      file->leaf_name_ = parts[i];
      if (owners.empty() && others_may_write && file->owner_uid() == static_cast<int64_t>(self)) {
        return absl::PermissionDeniedError(absl::StrCat(
            shown, " belongs to uid ", self, " (this agent's own user) but lies in a folder other users can write; "
            "a job's trace belongs to the job's user"));
      }
      return file;
    }
    ::close(dir);
    if (next < 0) {
      // O_DIRECTORY|O_NOFOLLOW on a link fails with ENOTDIR on some kernels, ELOOP on others.
      if (!last && (err == ENOTDIR || err == ELOOP)) {
        return absl::PermissionDeniedError(absl::StrCat(shown, ": '", parts[i], "' is not a folder (a symlink?)"));
      }
      return OpenError(shown, err);
    }
    dir = next;
  }
  ::close(dir);
  return absl::InternalError("unreachable: the walk ends at its last component");
}

absl::StatusOr<CheckedFile> CheckedFile::Check(std::string path, int fd, const std::vector<int64_t>& owners) {
  CheckedFile file(std::move(path), fd);
  const std::string& name = file.path_;
  struct stat st {};
  if (::fstat(fd, &st) != 0) return absl::InternalError(absl::StrCat("cannot stat ", name, ": ", std::strerror(errno)));
  if (!S_ISREG(st.st_mode)) return absl::PermissionDeniedError(absl::StrCat(name, " is not a regular file"));
  if (st.st_nlink != 1) return absl::PermissionDeniedError(absl::StrCat(name, " has other hard links"));
  if (!owners.empty() && std::find(owners.begin(), owners.end(), static_cast<int64_t>(st.st_uid)) == owners.end()) {
    std::string allowed;
    for (int64_t uid : owners) absl::StrAppend(&allowed, allowed.empty() ? "" : " or ", uid);
    return absl::PermissionDeniedError(
        absl::StrCat(name, " belongs to uid ", st.st_uid, ", not to the traced process (uid ", allowed, ")"));
  }
  file.owner_uid_ = st.st_uid;
  file.size_bytes_ = st.st_size;
  return file;
}

CheckedFile::CheckedFile(CheckedFile&& other) noexcept
    : path_(std::move(other.path_)),
      fd_(other.fd_),
      owner_uid_(other.owner_uid_),
      size_bytes_(other.size_bytes_),
      folder_fd_(other.folder_fd_),
      leaf_name_(std::move(other.leaf_name_)) {
  other.fd_ = -1;
  other.folder_fd_ = -1;
}

CheckedFile& CheckedFile::operator=(CheckedFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    if (folder_fd_ >= 0) ::close(folder_fd_);
    path_ = std::move(other.path_);
    fd_ = other.fd_;
    owner_uid_ = other.owner_uid_;
    size_bytes_ = other.size_bytes_;
    folder_fd_ = other.folder_fd_;
    leaf_name_ = std::move(other.leaf_name_);
    other.fd_ = -1;
    other.folder_fd_ = -1;
  }
  return *this;
}

CheckedFile::~CheckedFile() {
  if (fd_ >= 0) ::close(fd_);
  if (folder_fd_ >= 0) ::close(folder_fd_);
}

absl::Status CheckedFile::RemoveName() const {
  struct stat opened {};
  if (fd_ < 0 || ::fstat(fd_, &opened) != 0) return absl::FailedPreconditionError("the file is not open");
  const int folder = folder_fd_ >= 0 ? folder_fd_ : AT_FDCWD;
  const std::string name = folder_fd_ >= 0 ? leaf_name_ : path_;
  struct stat named {};
  if (::fstatat(folder, name.c_str(), &named, AT_SYMLINK_NOFOLLOW) != 0) {
    return errno == ENOENT ? absl::OkStatus()
                           : absl::InternalError(absl::StrCat("cannot stat ", path_, ": ", std::strerror(errno)));
  }
  if (named.st_dev != opened.st_dev || named.st_ino != opened.st_ino) {
    return absl::FailedPreconditionError(absl::StrCat(path_, " names another file now; left in place"));
  }
  if (::unlinkat(folder, name.c_str(), 0) != 0 && errno != ENOENT) {
    return absl::InternalError(absl::StrCat("cannot remove ", path_, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> CreatePrivateFolder(const std::string& shared_dir, const std::string& prefix, int64_t uid) {
  const int parent = ::open(shared_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (parent < 0) return absl::FailedPreconditionError(absl::StrCat("cannot open ", shared_dir, ": ", std::strerror(errno)));
  absl::StatusOr<std::string> result = absl::InternalError("no folder name was free");
  for (int attempt = 0; attempt < 8; ++attempt) {
    const std::string name = SafeFileName(absl::StrCat(prefix, "-", RandomHex(8)));
    if (::mkdirat(parent, name.c_str(), 0700) != 0) {
      if (errno == EEXIST) continue;  // someone was there first: never use theirs
      result = absl::FailedPreconditionError(absl::StrCat("cannot create ", shared_dir, "/", name, ": ", std::strerror(errno)));
      break;
    }
    const int folder = ::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    const bool owned = folder >= 0 && ::fchown(folder, static_cast<uid_t>(uid), static_cast<gid_t>(-1)) == 0 &&
                       ::fchmod(folder, 0700) == 0;
    const int err = errno;
    if (folder >= 0) ::close(folder);
    if (!owned) {
      ::unlinkat(parent, name.c_str(), AT_REMOVEDIR);
      result = absl::FailedPreconditionError(
          absl::StrCat("cannot hand ", shared_dir, "/", name, " to uid ", uid, ": ", std::strerror(err)));
      break;
    }
    result = name;
    break;
  }
  ::close(parent);
  return result;
}

std::string CheckedFile::proc_path() const { return absl::StrCat("/proc/self/fd/", fd_); }

std::vector<int64_t> ProcStatusNumbers(const std::string& proc_root, int32_t pid, std::string_view key) {
  std::ifstream status(absl::StrCat(proc_root, "/", pid, "/status"));
  const std::string prefix = std::string(key) + ":";
  std::string line;
  std::vector<int64_t> numbers;
  while (std::getline(status, line)) {
    if (line.rfind(prefix, 0) != 0) continue;
    for (absl::string_view field :
         absl::StrSplit(absl::string_view(line).substr(prefix.size()), absl::ByAnyChar(" \t"), absl::SkipEmpty())) {
      int64_t value = 0;
      if (!absl::SimpleAtoi(field, &value)) return {};
      numbers.push_back(value);
    }
    break;
  }
  return numbers;
}

int64_t ProcessUid(const std::string& proc_root, int32_t pid) {
  const std::vector<int64_t> uids = ProcStatusNumbers(proc_root, pid, "Uid");  // real, effective, …
  return uids.empty() ? -1 : uids.front();
}

bool SharesOurFilesystem(const std::string& proc_root, int32_t pid) {
  auto same = [](const std::string& a, const std::string& b) {
    struct stat x {}, y {};
    return ::stat(a.c_str(), &x) == 0 && ::stat(b.c_str(), &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
  };
  const std::string base = absl::StrCat(proc_root, "/", pid);
  return same(base + "/ns/mnt", "/proc/self/ns/mnt") && same(base + "/root", "/");
}

}  // namespace fleetprof
