#include "common/operator_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "spdlog/spdlog.h"

namespace fleetprof {

absl::StatusOr<std::string> ReadOperatorFile(const OperatorFile& rules, const std::string& path) {
  const std::string name = absl::StrCat(rules.what, " ", path);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) return absl::NotFoundError(absl::StrCat(name, ": ", std::strerror(errno)));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(name, " is not a regular file"));
  }
  if (st.st_uid != 0 && st.st_uid != ::geteuid()) {
    return absl::PermissionDeniedError(absl::StrCat(name, " belongs to uid ", st.st_uid,
                                                    ": it must belong to root or to this daemon's user (uid ",
                                                    ::geteuid(), ")"));
  }
  const std::string mode = absl::StrFormat("%04o", st.st_mode & 07777);
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return absl::PermissionDeniedError(absl::StrCat(name, " is writable by its group or others (mode ", mode,
                                                    "): whoever may write it decides what this daemon trusts; chmod go-w"));
  }
  if (rules.secret && (st.st_mode & (S_IRGRP | S_IROTH)) != 0) {
    spdlog::warn("{} is readable by its group or others (mode {}): it holds a secret; chmod go-r", name, mode);
  }
  std::string text;
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::InternalError(absl::StrCat(name, ": ", std::strerror(errno)));
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
    if (text.size() > rules.max_bytes) {
      return absl::InvalidArgumentError(absl::StrCat(name, " is larger than ", rules.max_bytes, " bytes"));
    }
  }
  return text;
}

}  // namespace fleetprof
