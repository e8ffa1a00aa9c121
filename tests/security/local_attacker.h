#pragma once
// Acting as a second local user against the root daemons: a child that drops to uid/gid
// kAttacker (as `setpriv --reuid` does), programs run as that user, and the dynolog API's
// framing. Shared by the local-attacker tests (each file one surface of the agent).
#include <grp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tests/test_support.h"

namespace fleetprof::testing {

constexpr uid_t kAttacker = 1001;

// Root can switch uid; without root there is no second user to be.
#define REQUIRE_ROOT() FLEETPROF_REQUIRE(::geteuid() == 0, "root, to act as a second local user (CI runs as root)")

// Runs `body` in a child process as uid/gid kAttacker with no supplementary groups, until
// the parent kills it. Returns the child's pid.
template <typename Body>
inline pid_t RunAsAttacker(Body body) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  if (::setgroups(0, nullptr) != 0 || ::setresgid(kAttacker, kAttacker, kAttacker) != 0 ||
      ::setresuid(kAttacker, kAttacker, kAttacker) != 0) {
    ::_exit(97);
  }
  body();
  ::_exit(0);
}

inline void Reap(pid_t pid) {
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
}

// A program run as kAttacker with exactly `env` (nothing inherited), killed and reaped when
// this goes out of scope. argv and env are laid out before the fork: the child only switches
// uid and calls execve, allocating nothing in a copy of a threaded process.
class AttackerProcess {
 public:
  AttackerProcess(std::vector<std::string> argv, std::vector<std::string> env)
      : argv_(std::move(argv)), env_(std::move(env)) {
    std::vector<char*> args = Pointers(argv_), vars = Pointers(env_);
    pid_ = RunAsAttacker([&] {
      ::execve(args[0], args.data(), vars.data());
      ::_exit(98);
    });
  }
  AttackerProcess(AttackerProcess&& other) noexcept
      : argv_(std::move(other.argv_)), env_(std::move(other.env_)), pid_(std::exchange(other.pid_, -1)) {}
  AttackerProcess& operator=(AttackerProcess&&) = delete;
  ~AttackerProcess() {
    if (pid_ > 0) Reap(pid_);
  }
  pid_t pid() const { return pid_; }

 private:
  static std::vector<char*> Pointers(std::vector<std::string>& strings) {
    std::vector<char*> out;
    for (std::string& s : strings) out.push_back(s.data());
    out.push_back(nullptr);
    return out;
  }
  std::vector<std::string> argv_, env_;
  pid_t pid_ = -1;
};

// One dynolog request on connection `fd`, framed as `dyno` does (int32 length, native order);
// the reply's JSON, or what went wrong. Closes `fd`.
inline std::string DynologExchange(int fd, const std::string& json) {
  if (fd < 0) return "(cannot connect)";
  const int32_t length = static_cast<int32_t>(json.size());
  std::string framed(reinterpret_cast<const char*>(&length), sizeof(length));
  framed += json;
  ::send(fd, framed.data(), framed.size(), MSG_NOSIGNAL);
  std::string received;
  char buffer[4096];
  ssize_t n;
  while ((n = ::recv(fd, buffer, sizeof(buffer), 0)) > 0) received.append(buffer, n);
  ::close(fd);
  return received.size() > sizeof(length) ? received.substr(sizeof(length)) : "(no reply)";
}

inline size_t Occurrences(const std::string& text, const std::string& needle) {
  size_t count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++count;
  return count;
}

// Runs `exchange` as kAttacker in a child and returns what it produced (the child writes it to
// a pipe): an attack whose answers the test then reads as root.
template <typename Exchange>
std::string AsAttacker(Exchange exchange) {
  int out[2];
  if (::pipe(out) != 0) return "(no pipe)";
  const pid_t attacker = RunAsAttacker([&] {
    ::close(out[0]);
    const std::string produced = exchange();
    (void)!::write(out[1], produced.data(), produced.size());
  });
  ::close(out[1]);
  std::string produced;
  char buffer[4096];
  for (ssize_t n; (n = ::read(out[0], buffer, sizeof(buffer))) > 0;) produced.append(buffer, n);
  ::close(out[0]);
  Reap(attacker);
  return produced;
}

}  // namespace fleetprof::testing
