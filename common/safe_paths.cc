#include "common/safe_paths.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

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

absl::Status EnsureSharedDropFolder(const std::string& dir) {
  std::error_code ec;
  const std::filesystem::path path(dir);
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  if (::mkdir(dir.c_str(), 01733) != 0 && errno != EEXIST) {
    return absl::FailedPreconditionError(absl::StrCat("cannot create ", dir, ": ", std::strerror(errno)));
  }
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) {
    return absl::FailedPreconditionError(absl::StrCat("cannot stat ", dir, ": ", std::strerror(errno)));
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(dir, " is not a folder (a symlink?): remove it or choose another"));
  }
  if (st.st_uid != ::geteuid()) {
    return absl::FailedPreconditionError(absl::StrCat(
        dir, " belongs to uid ", st.st_uid, ", not to this agent (uid ", ::geteuid(),
        "): someone created it first; remove it or choose another folder"));
  }
  // mkdir's mode passes through the umask; set it exactly.
  if ((st.st_mode & 07777) != 01733 && ::chmod(dir.c_str(), 01733) != 0) {
    return absl::FailedPreconditionError(absl::StrCat("cannot chmod 1733 ", dir, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::Status CheckOwnedRegularFile(const std::string& path, int64_t uid) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat("cannot stat ", path, ": ", std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) return absl::PermissionDeniedError(absl::StrCat(path, " is not a regular file"));
  if (st.st_nlink != 1) return absl::PermissionDeniedError(absl::StrCat(path, " has other hard links"));
  if (uid >= 0 && static_cast<int64_t>(st.st_uid) != uid) {
    return absl::PermissionDeniedError(
        absl::StrCat(path, " belongs to uid ", st.st_uid, ", not to the traced process (uid ", uid, ")"));
  }
  return absl::OkStatus();
}

int64_t ProcessUid(const std::string& proc_root, int32_t pid) {
  std::ifstream status(absl::StrCat(proc_root, "/", pid, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Uid:", 0) != 0) continue;
    absl::string_view rest = absl::StripAsciiWhitespace(absl::string_view(line).substr(4));
    int64_t uid = -1;
    if (absl::SimpleAtoi(rest.substr(0, rest.find_first_of(" \t")), &uid)) return uid;
  }
  return -1;
}

}  // namespace fleetprof
