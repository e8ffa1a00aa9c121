#include "common/runtime.h"

#include <malloc.h>
#include <sys/resource.h>

#include <signal.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <cerrno>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"

namespace fleetprof {

int64_t UnixNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string RandomHex(int bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string raw(static_cast<size_t>(bytes), '\0');
  size_t filled = 0;
  while (filled < raw.size()) {
    ssize_t got = getrandom(raw.data() + filled, raw.size() - filled, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) std::abort();  // no kernel randomness: an id could be guessed; never go on
    filled += static_cast<size_t>(got);
  }
  std::string out;
  out.reserve(raw.size() * 2);
  for (unsigned char b : raw) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 15]);
  }
  return out;
}

absl::StatusOr<std::string> ReadFileUpTo(const std::string& path, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::string text(max_bytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > max_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(path, " is larger than ", max_bytes, " bytes"));
  }
  return text;
}

int64_t RaiseOpenFileLimit() {
  rlimit limit {};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return 1024;
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  return limit.rlim_cur == RLIM_INFINITY ? int64_t{1} << 20 : static_cast<int64_t>(limit.rlim_cur);
}

void TuneMalloc() {
  ::mallopt(M_MMAP_THRESHOLD, 4 << 20);
  ::mallopt(M_TRIM_THRESHOLD, 64 << 20);
  const long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  ::mallopt(M_ARENA_MAX, static_cast<int>(std::clamp(2 * cores, 2L, 256L)));
}

void ReleaseFreeMemory() { ::malloc_trim(0); }

std::string HostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}

void SetUpLogging(const std::string& component, const std::string& level) {
  auto logger = spdlog::stderr_color_mt(component);
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e%z %^%l%$ %n: %v");
  logger->set_level(spdlog::level::from_str(level));
  spdlog::set_default_logger(logger);
  spdlog::flush_on(spdlog::level::info);
}

void BlockShutdownSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

int WaitForShutdownSignal(const std::function<void()>& on_hangup) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  while (true) {
    int sig = 0;
    sigwait(&set, &sig);
    if (sig != SIGHUP) return sig;
    if (on_hangup) on_hangup();
  }
}

}  // namespace fleetprof
