#include "tests/kineto/script_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace fleetprof::testing {
namespace {

bool DroppedFromChildEnvironment(const std::string& entry) {
  for (const char* name : {"FLEETPROF_JOB=", "KINETO_IPC_SOCKET_DIR=", "SLURM_JOB_ID="}) {
    if (entry.rfind(name, 0) == 0) return true;
  }
  return false;
}

int DecodeStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return -WTERMSIG(status);
  return -1;
}

}  // namespace

ScriptProcess::~ScriptProcess() {
  if (pid_ > 0) {
    ::kill(-pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

bool ScriptProcess::Start(const std::vector<std::string>& argv, const std::string& log_path,
                          const std::map<std::string, std::string>& env) {
  log_path_ = log_path;
  std::vector<std::string> env_entries;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    if (!DroppedFromChildEnvironment(entry) && env.count(name) == 0) env_entries.push_back(entry);
  }
  for (const auto& [name, value] : env) env_entries.push_back(name + "=" + value);
  // Everything the child needs is prepared before fork(): after it, only async-signal-safe
  // calls are allowed.
  std::vector<char*> c_argv, c_env;
  for (const std::string& arg : argv) c_argv.push_back(const_cast<char*>(arg.c_str()));
  c_argv.push_back(nullptr);
  for (std::string& entry : env_entries) c_env.push_back(entry.data());
  c_env.push_back(nullptr);
  const int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log_fd < 0) return false;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    ::dup2(log_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    ::execve(c_argv[0], c_argv.data(), c_env.data());
    _exit(127);
  }
  ::close(log_fd);
  if (pid < 0) return false;
  ::setpgid(pid, pid);  // also here, so a kill right after Start() reaches the group
  pid_ = pid;
  return true;
}

int ScriptProcess::Wait(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return exit_code_;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    int status = 0;
    const pid_t done = ::waitpid(pid_, &status, WNOHANG);
    if (done == pid_) {
      ::kill(-pid_, SIGKILL);  // anything the child left behind in its group
      pid_ = -1;
      exit_code_ = DecodeStatus(status);
      return exit_code_;
    }
    if (std::chrono::steady_clock::now() >= deadline) return -1000;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

int ScriptProcess::Stop(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return exit_code_;
  ::kill(-pid_, SIGTERM);
  const int code = Wait(timeout);
  if (code != -1000) return code;
  ::kill(-pid_, SIGKILL);
  return Wait(std::chrono::seconds(5));
}

std::string ScriptProcess::Output() const {
  std::ifstream in(log_path_, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool ScriptProcess::WaitForOutput(const std::string& text,
                                  std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (Output().find(text) == std::string::npos) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

int CountOccurrences(const std::string& haystack, const std::string& needle) {
  int count = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos;
       at = haystack.find(needle, at + needle.size())) {
    ++count;
  }
  return count;
}

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string pattern = std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/kin.XXXXXX";
  if (::mkdtemp(pattern.data()) != nullptr) path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
}

}  // namespace fleetprof::testing
