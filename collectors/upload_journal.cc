#include "collectors/upload_journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "auth/token_hash.h"
#include "common/runtime.h"

namespace fleetprof {

std::string UploadJournal::Key(const std::string& path, int64_t size, int64_t mtime_ns) {
  return absl::StrCat(size, "\t", mtime_ns, "\t", path);
}

absl::Status UploadJournal::Open(const std::string& path) {
  absl::MutexLock lock(&mu_);
  path_ = path;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> parts = absl::StrSplit(line, absl::MaxSplits('\t', 3));
    int64_t size = 0, mtime = 0;
    if (parts.size() != 4 || !absl::SimpleAtoi(parts[1], &size) ||
        !absl::SimpleAtoi(parts[2], &mtime)) {
      continue;  // a torn last line after a crash: that file is simply uploaded again
    }
    done_.insert(Key(parts[3], size, mtime));
  }
  return absl::OkStatus();
}

bool UploadJournal::Contains(const TraceFile& file) const {
  absl::MutexLock lock(&mu_);
  return done_.count(Key(file.path, file.size, file.mtime_ns)) > 0;
}

absl::Status UploadJournal::Record(const TraceFile& file, const std::string& outcome) {
  absl::MutexLock lock(&mu_);
  std::string line = absl::StrCat(outcome, "\t", Key(file.path, file.size, file.mtime_ns), "\n");
  int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return absl::InternalError(absl::StrCat("cannot write ", path_));
  bool ok = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  ok = ::fsync(fd) == 0 && ok;
  ::close(fd);
  if (!ok) return absl::InternalError(absl::StrCat("cannot write ", path_));
  done_.insert(Key(file.path, file.size, file.mtime_ns));
  return absl::OkStatus();
}

std::string UploadIdFor(const std::string& secret, const std::string& node, const TraceFile& file) {
  // SHA-256: stable across builds and restarts, unlike std::hash, and unpredictable
  // without the secret.
  return absl::StrCat(
      "agent-", Sha256Hex(absl::StrCat(secret, "\n", node, "\n", file.path, "\n", file.size, "\n", file.mtime_ns))
                    .substr(0, 32));
}

absl::StatusOr<std::string> LoadOrCreateUploadSecret(const std::string& path) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd >= 0) {
      const std::string secret = RandomHex(32);
      const bool written = ::write(fd, secret.data(), secret.size()) == static_cast<ssize_t>(secret.size()) &&
                           ::fsync(fd) == 0;
      ::close(fd);
      if (!written) {
        ::unlink(path.c_str());
        return absl::FailedPreconditionError(absl::StrCat("cannot write ", path));
      }
      return secret;
    }
    if (errno != EEXIST) {
      return absl::FailedPreconditionError(absl::StrCat("cannot create ", path, ": ", std::strerror(errno)));
    }
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) return absl::FailedPreconditionError(absl::StrCat("cannot read ", path, ": ", std::strerror(errno)));
    struct stat st {};
    char buffer[129] = {};
    ssize_t n = -1;
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) n = ::read(fd, buffer, sizeof(buffer) - 1);
    ::close(fd);
    if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          path, " must be a regular file of this agent's user readable by nobody else (mode 0600); remove it"));
    }
    if (n >= 32) return std::string(buffer, static_cast<size_t>(n));
    // Cut short by a crash while it was first written: make a new one (ids change once).
    ::unlink(path.c_str());
  }
  return absl::FailedPreconditionError(absl::StrCat("cannot create ", path));
}

}  // namespace fleetprof
