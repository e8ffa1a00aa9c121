#include "tests/xprof/profiler_standin_process.h"

#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"

namespace fleetprof::testing {
namespace {

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

bool PythonHasGrpc() {
  const std::string command =
      absl::StrCat(XPROF_PYTHON, " -c 'import grpc, google.protobuf' >/dev/null 2>&1");
  return std::system(command.c_str()) == 0;
}

absl::Status ProfilerStandIn::Start(const StandInOptions& options, const std::string& work_dir) {
  record_path_ = work_dir + "/standin_record.json";
  log_path_ = work_dir + "/standin.log";
  const std::string ready_path = work_dir + "/standin_ready.json";
  std::vector<std::string> argv = {XPROF_PYTHON, XPROF_STANDIN_SCRIPT,
                                   "--mode=" + options.mode,
                                   "--xspace=" + options.xspace_path,
                                   "--proto=" + std::string(XPROF_PROTO_FILE),
                                   "--protoc=" + std::string(XPROF_PROTOC),
                                   "--record=" + record_path_,
                                   "--ready=" + ready_path,
                                   "--sleep_ms=" + std::to_string(options.sleep_ms)};
  if (!options.written_host.empty()) argv.push_back("--written_host=" + options.written_host);
  if (!options.write_root.empty()) argv.push_back("--write_root=" + options.write_root);
  if (!options.release_file.empty()) argv.push_back("--release_file=" + options.release_file);
  if (!options.link_session.empty()) argv.push_back("--link_session=" + options.link_session);
  if (options.port != 0) argv.push_back("--port=" + std::to_string(options.port));
  std::error_code made;
  std::filesystem::create_directories(work_dir, made);
  if (made) return absl::InternalError(absl::StrCat("cannot make ", work_dir, ": ", made.message()));
  const uid_t uid = static_cast<uid_t>(options.run_as_uid);
  if (options.run_as_uid >= 0 && chown(work_dir.c_str(), uid, uid) != 0) {
    return absl::InternalError(absl::StrCat("cannot hand ", work_dir, " to uid ", options.run_as_uid));
  }

  // Laid out before the fork: the child of a threaded process only switches user and execs.
  std::vector<std::string> env = options.env;
  std::vector<char*> args, vars;
  for (std::string& arg : argv) args.push_back(arg.data());
  args.push_back(nullptr);
  for (std::string& var : env) vars.push_back(var.data());
  vars.push_back(nullptr);
  pid_ = fork();
  if (pid_ < 0) return absl::InternalError("fork failed");
  if (pid_ == 0) {
    const int log = open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (log >= 0) {
      dup2(log, STDOUT_FILENO);
      dup2(log, STDERR_FILENO);
    }
    if (options.run_as_uid >= 0 &&
        (setgroups(0, nullptr) != 0 || setresgid(uid, uid, uid) != 0 || setresuid(uid, uid, uid) != 0)) {
      _exit(126);
    }
    if (options.env.empty()) {
      execv(args[0], args.data());
    } else {
      execve(args[0], args.data(), vars.data());
    }
    _exit(127);
  }

  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < give_up) {
    const std::string ready = ReadWholeFile(ready_path);
    if (const auto colon = ready.find(':'); colon != std::string::npos) {
      port_ = std::atoi(ready.c_str() + colon + 1);
      if (port_ > 0) return absl::OkStatus();
    }
    int wait_status = 0;
    if (waitpid(pid_, &wait_status, WNOHANG) == pid_) {
      pid_ = -1;
      return absl::InternalError(absl::StrCat("profiler stand-in exited at start:\n", Log()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return absl::DeadlineExceededError(absl::StrCat("profiler stand-in did not start:\n", Log()));
}

ProfilerStandIn::~ProfilerStandIn() {
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);
  for (int i = 0; i < 100; ++i) {  // up to 5 s for a clean stop (it removes its generated code)
    if (waitpid(pid_, nullptr, WNOHANG) == pid_) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
}

std::optional<std::string> ProfilerStandIn::Recorded(const std::string& key) const {
  const std::string record = ReadWholeFile(record_path_);
  const std::string needle = absl::StrCat("\"", key, "\": ");
  const size_t at = record.find(needle);
  if (at == std::string::npos) return std::nullopt;
  const size_t begin = at + needle.size();
  size_t end = record.find_first_of(",\n}", begin);
  if (record[begin] == '"') end = record.find('"', begin + 1) + 1;
  std::string value = record.substr(begin, end - begin);
  if (value.size() >= 2 && value.front() == '"') value = value.substr(1, value.size() - 2);
  return value;
}

std::string ProfilerStandIn::Log() const { return ReadWholeFile(log_path_); }

}  // namespace fleetprof::testing
