#pragma once
// Runs tests/xprof/profiler_standin.py (a fake JAX/TF profiler server) as a child process on an
// ephemeral loopback port, and reads back what it recorded about the requests it got.

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace fleetprof::testing {

struct StandInOptions {
  std::string mode = "emit";  // emit | file | repo | empty | busy
  std::string xspace_path;    // the trace it serves
  int sleep_ms = 200;         // capture time; negative = the requested duration (Terminate ends it)
  std::string release_file;   // non-empty: a capture also lasts until this file exists
  std::string written_host;   // file mode: file named after this instead of host_name
  std::string write_root;     // file mode: written under this instead of repository_root
  std::string link_session;   // file/repo mode: the session folder is made a link to this, nothing written
  int port = 0;               // the port to serve on; 0: an ephemeral one
  // Non-empty: the stand-in's whole environment (nothing inherited), e.g. the FLEETPROF_JOB a
  // node agent's discovery reads.
  std::vector<std::string> env;
  // >= 0: the stand-in runs as this uid and gid, with no supplementary groups (the caller is
  // root); its folder is handed to that user.
  int run_as_uid = -1;
};

class ProfilerStandIn {
 public:
  ProfilerStandIn() = default;
  ~ProfilerStandIn();  // SIGTERM, then SIGKILL if it lingers
  ProfilerStandIn(const ProfilerStandIn&) = delete;
  ProfilerStandIn& operator=(const ProfilerStandIn&) = delete;

  // Starts the stand-in with its files under `work_dir` (made if missing; one folder per
  // stand-in) and waits until it serves.
  absl::Status Start(const StandInOptions& options, const std::string& work_dir);
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  // A scalar of the stand-in's flat JSON record (e.g. "request.raw.opts.duration_ms"), strings
  // unquoted; nullopt when absent.
  std::optional<std::string> Recorded(const std::string& key) const;
  std::string Log() const;

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  std::string record_path_;
  std::string log_path_;
};

// Checks that Debian's python3 can import grpc and protobuf (the stand-in's only dependencies).
bool PythonHasGrpc();

}  // namespace fleetprof::testing
