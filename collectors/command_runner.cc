#include "collectors/command_runner.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/ascii.h"

namespace fleetprof {
namespace {

constexpr int64_t kNanosPerMs = 1'000'000;
constexpr int kPollMs = 100;

// Where the child failed before its program ran, sent up the exec pipe with errno.
enum class ChildStage : int { kChdir = 1, kLimit, kGroups, kGid, kUid, kParentGone, kExec };

const char* StageText(ChildStage stage) {
  switch (stage) {
    case ChildStage::kChdir: return "cannot enter its folder";
    case ChildStage::kLimit: return "cannot set its file size limit";
    case ChildStage::kGroups: return "cannot drop supplementary groups";
    case ChildStage::kGid: return "cannot take the gid";
    case ChildStage::kUid: return "cannot take the uid";
    case ChildStage::kParentGone: return "the agent went away";
    case ChildStage::kExec: return "cannot run it";
  }
  return "failed";
}

// In the child, after fork(): only async-signal-safe calls until execve.
[[noreturn]] void ChildFails(int report_fd, ChildStage stage) {
  const int report[2] = {static_cast<int>(stage), errno};
  [[maybe_unused]] ssize_t n = ::write(report_fd, report, sizeof(report));
  ::_exit(127);
}

struct Prepared {
  std::vector<char*> argv;
  std::vector<char*> env;
};

[[noreturn]] void RunChild(const CommandSpec& spec, const Prepared& prepared, bool change_user, const char* cwd,
                           int null_fd, int output_fd, int report_fd, pid_t parent) {
  ::setpgid(0, 0);  // its own group: the timeout kills whatever it started too
  ::dup2(null_fd, STDIN_FILENO);
  ::dup2(output_fd, STDOUT_FILENO);
  ::dup2(output_fd, STDERR_FILENO);
  // Nothing of the agent's (sockets, journals, traces) crosses the exec; report_fd is
  // close-on-exec like every other descriptor from here.
  if (::syscall(SYS_close_range, 3U, ~0U, 4U /* CLOSE_RANGE_CLOEXEC */) != 0) {
    for (int fd = 3; fd < 4096; ++fd) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  }
  // The agent's own signal settings are not the program's.
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::signal(SIGPIPE, SIG_DFL);
  ::signal(SIGXFSZ, SIG_DFL);
  if (::chdir(cwd) != 0) ChildFails(report_fd, ChildStage::kChdir);
  if (spec.max_file_bytes > 0) {
    const rlimit limit{static_cast<rlim_t>(spec.max_file_bytes), static_cast<rlim_t>(spec.max_file_bytes)};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) ChildFails(report_fd, ChildStage::kLimit);
  }
  if (change_user) {
    if (::setgroups(0, nullptr) != 0) ChildFails(report_fd, ChildStage::kGroups);
    const gid_t gid = static_cast<gid_t>(spec.gid);
    if (::setresgid(gid, gid, gid) != 0) ChildFails(report_fd, ChildStage::kGid);
    const uid_t uid = static_cast<uid_t>(spec.uid);
    if (::setresuid(uid, uid, uid) != 0) ChildFails(report_fd, ChildStage::kUid);
  }
  // Set after the uid change, which clears it; then checked, in case the agent died between.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ChildFails(report_fd, ChildStage::kParentGone);
  ::execve(prepared.argv[0], prepared.argv.data(), prepared.env.data());
  ChildFails(report_fd, ChildStage::kExec);
}

void CloseAll(std::initializer_list<int> fds) {
  for (int fd : fds) {
    if (fd >= 0) ::close(fd);
  }
}

// Reads what is there into `out` (up to `cap` bytes kept); false at end of file.
bool ReadSome(int fd, size_t cap, std::string* out) {
  char buffer[4096];
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n > 0) {
      if (out->size() < cap) out->append(buffer, std::min(static_cast<size_t>(n), cap - out->size()));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
}

}  // namespace

std::string CommandOutcome::Describe() const {
  std::string what;
  if (timed_out) {
    what = "killed at its time limit";
  } else if (cancelled) {
    what = "stopped: the agent is stopping";
  } else if (signal == SIGXFSZ) {
    what = "ended by SIGXFSZ: a file it wrote reached the size limit";
  } else if (signal != 0) {
    what = absl::StrCat("ended by signal ", signal);
  } else {
    what = absl::StrCat("exit status ", exit_code);
  }
  // Its last line of output says why, usually; one line, so a message stays one line.
  absl::string_view text = absl::StripAsciiWhitespace(output);
  if (const size_t nl = text.rfind('\n'); nl != absl::string_view::npos) text = text.substr(nl + 1);
  if (!text.empty()) absl::StrAppend(&what, ": ", text.substr(0, 300));
  return what;
}

// Waits for the child's exec: its report pipe closes then (close-on-exec), or carries the
// stage that failed and its errno. The child is reaped when it could not exec.
static absl::Status AwaitExec(const CommandSpec& spec, pid_t pid, int report_fd) {
  int failure[2] = {0, 0};
  ssize_t got = 0;
  do {
    got = ::read(report_fd, failure, sizeof(failure));
  } while (got < 0 && errno == EINTR);
  ::close(report_fd);
  if (got != static_cast<ssize_t>(sizeof(failure))) return absl::OkStatus();
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return absl::FailedPreconditionError(absl::StrCat("cannot run ", spec.argv[0],
                                                    spec.uid >= 0 ? absl::StrCat(" as uid ", spec.uid) : "", ": ",
                                                    StageText(static_cast<ChildStage>(failure[0])), " (",
                                                    std::strerror(failure[1]), ")"));
}

// Reads the child's output (capped) until it exits, killing its group at the timeout or on
// cancellation; closes `output_fd`.
static CommandOutcome CollectUntilExit(const CommandSpec& spec, pid_t pid, int output_fd) {
  ::fcntl(output_fd, F_SETFL, O_NONBLOCK);
  CommandOutcome outcome;
  const Clock& clock = *spec.clock;
  const int64_t deadline = clock.MonotonicNanos() + spec.timeout_ms * kNanosPerMs;
  bool open = true;
  int status = 0;
  while (true) {
    if (open) {
      pollfd wait{output_fd, POLLIN, 0};
      const int64_t left_ms = std::max<int64_t>(0, (deadline - clock.MonotonicNanos()) / kNanosPerMs);
      ::poll(&wait, 1, static_cast<int>(std::min<int64_t>(kPollMs, left_ms)));
      open = ReadSome(output_fd, spec.max_output_bytes, &outcome.output);
    } else {
      SleepUntil(clock, std::min(deadline, clock.MonotonicNanos() + kPollMs * kNanosPerMs));
    }
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    outcome.timed_out = clock.MonotonicNanos() >= deadline;
    outcome.cancelled = !outcome.timed_out && spec.cancelled && spec.cancelled();
    if (outcome.timed_out || outcome.cancelled) {
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      break;
    }
  }
  // What it wrote last; a process it left behind holding the pipe is not waited for.
  if (open) ReadSome(output_fd, spec.max_output_bytes, &outcome.output);
  ::close(output_fd);
  if (WIFEXITED(status)) outcome.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) outcome.signal = WTERMSIG(status);
  return outcome;
}

absl::StatusOr<CommandOutcome> RunCommand(const CommandSpec& spec) {
  if (spec.argv.empty() || spec.argv[0].empty() || spec.argv[0][0] != '/') {
    return absl::InvalidArgumentError("a command needs the absolute path of its program");
  }
  if ((spec.uid >= 0) != (spec.gid >= 0)) return absl::InvalidArgumentError("a command's uid and gid go together");
  // Everything the child needs is made before fork(): after it only async-signal-safe calls.
  std::vector<std::string> argv = spec.argv;
  std::vector<std::string> env = spec.env;
  Prepared prepared;
  for (std::string& arg : argv) prepared.argv.push_back(arg.data());
  prepared.argv.push_back(nullptr);
  for (std::string& entry : env) prepared.env.push_back(entry.data());
  prepared.env.push_back(nullptr);
  const std::string cwd = spec.cwd.empty() ? "/" : spec.cwd;
  const std::string& program = spec.argv[0];

  int output[2] = {-1, -1};
  int report[2] = {-1, -1};
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd < 0 || ::pipe2(output, O_CLOEXEC) != 0 || ::pipe2(report, O_CLOEXEC) != 0) {
    const int err = errno;
    CloseAll({null_fd, output[0], output[1], report[0], report[1]});
    return absl::UnavailableError(absl::StrCat("cannot run ", program, ": ", std::strerror(err)));
  }
  // An agent that is not root runs programs as its own user only: it has no identity to change.
  const bool change_user = spec.uid >= 0 && !(::geteuid() != 0 && spec.uid == ::getuid() && spec.uid == ::geteuid() &&
                                             spec.gid == ::getgid() && spec.gid == ::getegid());
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) RunChild(spec, prepared, change_user, cwd.c_str(), null_fd, output[1], report[1], parent);
  const int fork_errno = errno;
  CloseAll({null_fd, output[1], report[1]});
  if (pid < 0) {
    CloseAll({output[0], report[0]});
    return absl::UnavailableError(absl::StrCat("cannot run ", program, ": fork: ", std::strerror(fork_errno)));
  }
  ::setpgid(pid, pid);  // also here, so a kill right after the fork reaches the group

  if (absl::Status started = AwaitExec(spec, pid, report[0]); !started.ok()) {
    ::close(output[0]);
    return started;
  }
  return CollectUntilExit(spec, pid, output[0]);
}

}  // namespace fleetprof
