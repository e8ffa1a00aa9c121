#include "collectors/process_jobs.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/text_checks.h"

namespace fleetprof {

absl::StatusOr<std::string> ReadProcFile(const std::string& path, size_t max_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    std::string message = absl::StrCat(path, ": ", std::strerror(err));
    if (err == ENOENT || err == ESRCH) return absl::NotFoundError(message);
    if (err == EACCES || err == EPERM) return absl::PermissionDeniedError(message);
    return absl::UnavailableError(message);
  }
  std::string contents;
  char buffer[8192];
  while (true) {
    const size_t want = std::min(sizeof(buffer), max_bytes - contents.size());
    ssize_t n = want == 0 ? 0 : ::read(fd, buffer, want);
    if (n > 0) {
      contents.append(buffer, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    int err = errno;
    ::close(fd);
    // A process that exits while we read makes read() fail with ESRCH.
    if (n < 0) return absl::NotFoundError(absl::StrCat(path, ": ", std::strerror(err)));
    return contents;
  }
}

// The command name sits in parentheses and may itself contain spaces and ')', so the fixed
// fields are counted from the last ')'.
std::optional<ProcessStat> ParseProcessStat(std::string_view text) {
  const size_t open = text.find('(');
  const size_t close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) return std::nullopt;
  const std::string_view rest = text.substr(close + 1);
  const std::vector<absl::string_view> fields =
      absl::StrSplit(absl::string_view(rest.data(), rest.size()), absl::ByAnyChar(" \t\n"), absl::SkipEmpty());
  // fields[0] is field 3 (state) in proc(5); utime is 14, stime 15, starttime 22, rss 24.
  constexpr size_t kUtime = 14 - 3, kStime = 15 - 3, kStart = 22 - 3, kRss = 24 - 3;
  if (fields.size() <= kRss) return std::nullopt;
  uint64_t utime = 0, stime = 0;
  int64_t rss = 0;
  ProcessStat stat;
  if (!absl::SimpleAtoi(fields[kUtime], &utime) || !absl::SimpleAtoi(fields[kStime], &stime) ||
      !absl::SimpleAtoi(fields[kStart], &stat.start_ticks) || !absl::SimpleAtoi(fields[kRss], &rss)) {
    return std::nullopt;
  }
  stat.command = std::string(text.substr(open + 1, close - open - 1));
  stat.cpu_ticks = utime + stime;
  stat.resident_pages = rss > 0 ? static_cast<uint64_t>(rss) : 0;
  return stat;
}

std::optional<uint64_t> ReadProcessStartTicks(const std::string& proc_root, int32_t pid) {
  if (pid <= 0) return std::nullopt;
  absl::StatusOr<std::string> text = ReadProcFile(absl::StrCat(proc_root, "/", pid, "/stat"));
  if (!text.ok()) return std::nullopt;
  std::optional<ProcessStat> stat = ParseProcessStat(*text);
  if (!stat) return std::nullopt;
  return stat->start_ticks;
}

std::optional<std::string> FindJobInEnviron(std::string_view environ) {
  const std::string prefix = std::string(kJobEnvironmentVariable) + "=";
  while (!environ.empty()) {
    size_t end = environ.find('\0');
    std::string_view entry = environ.substr(0, end);
    if (entry.size() > prefix.size() && entry.starts_with(prefix)) {
      // A job name travels in protos, labels and logs: one that is not printable UTF-8 of
      // at most 253 bytes counts as none, so the process falls back to "unassigned".
      std::string_view job = entry.substr(prefix.size());
      if (!IsPrintableUtf8(job, 253)) return std::nullopt;
      return std::string(job);
    }
    if (end == std::string_view::npos) break;
    environ.remove_prefix(end + 1);
  }
  return std::nullopt;
}

absl::StatusOr<std::string> ReadProcessEnviron(const std::string& proc_root, int pid) {
  // One byte past the bound tells a block that ends there from one the bound cut.
  absl::StatusOr<std::string> environ =
      ReadProcFile(absl::StrCat(proc_root, "/", pid, "/environ"), kMaxEnvironBytes + 1);
  if (!environ.ok() || environ->size() <= kMaxEnvironBytes) return environ;
  const size_t last_end = environ->rfind('\0', kMaxEnvironBytes - 1);
  environ->resize(last_end == std::string::npos ? 0 : last_end + 1);
  return environ;
}

std::optional<std::string> ReadProcessJob(const std::string& proc_root, int pid) {
  absl::StatusOr<std::string> environ = ReadProcessEnviron(proc_root, pid);
  if (!environ.ok()) return std::nullopt;
  return FindJobInEnviron(*environ);
}

ProcessJobCache::ProcessJobCache(std::string proc_root) : proc_root_(std::move(proc_root)) {}

std::optional<std::string> ProcessJobCache::JobOf(int pid, uint64_t start_ticks,
                                                  std::string_view command) {
  auto it = entries_.find(pid);
  if (it == entries_.end() || it->second.start_ticks != start_ticks ||
      it->second.command != command) {
    Entry entry;
    entry.start_ticks = start_ticks;
    entry.command = std::string(command);
    entry.job = ReadProcessJob(proc_root_, pid);
    it = entries_.insert_or_assign(pid, std::move(entry)).first;
  }
  it->second.seen_in_scan = scan_;
  return it->second.job;
}

void ProcessJobCache::Sweep() {
  std::erase_if(entries_, [this](const auto& item) { return item.second.seen_in_scan != scan_; });
  ++scan_;
}

}  // namespace fleetprof
