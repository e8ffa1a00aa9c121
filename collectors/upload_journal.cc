#include "collectors/upload_journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace fleetprof {

std::string UploadJournal::Key(const std::string& path, int64_t size, int64_t mtime_ns) {
  return absl::StrCat(size, "\t", mtime_ns, "\t", path);
}

absl::Status UploadJournal::Open(const std::string& path) {
  std::lock_guard lock(mu_);
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
  std::lock_guard lock(mu_);
  return done_.count(Key(file.path, file.size, file.mtime_ns)) > 0;
}

absl::Status UploadJournal::Record(const TraceFile& file, const std::string& outcome) {
  std::lock_guard lock(mu_);
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

std::string UploadIdFor(const std::string& node, const TraceFile& file) {
  // FNV-1a: stable across builds and restarts, unlike std::hash.
  uint64_t h = 1469598103934665603ull;
  for (char c : absl::StrCat(node, "\n", file.path, "\n", file.size, "\n", file.mtime_ns)) {
    h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  }
  return absl::StrCat("agent-", absl::Hex(h, absl::kZeroPad16));
}

}  // namespace fleetprof
