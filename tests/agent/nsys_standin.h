#pragma once
// The stand-in `nsys` of the agent's tests (tests/agent/nsys_standin.py: NOT Nsight Systems; it
// answers start, stop and export as the documented CLI does), installed as a program the agent
// can take for --nsys: a root-owned wrapper, mode 0755, that passes the stand-in its state
// folder and the real export it hands out as reports.

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace fleetprof::testing {

struct NsysStandin {
  std::string program;  // DIR/bin/nsys: pass it as --nsys
  std::string state;    // DIR/state: log.jsonl has one line per call (argv, uid, gid, groups, cwd)
  std::string Log() const {
    std::ifstream in(state + "/log.jsonl");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
};

// Writes the wrapper under `dir` (made readable by every user: jobs of any uid run it), handing
// out `source` (a gzipped nsys SQLite export) as reports; `extra`: more stand-in options.
inline NsysStandin InstallNsysStandin(const std::string& dir, const std::string& source,
                                      const std::string& extra = "") {
  namespace fs = std::filesystem;
  NsysStandin standin{dir + "/bin/nsys", dir + "/state"};
  fs::create_directories(dir + "/bin");
  fs::create_directories(standin.state);
  ::chmod(dir.c_str(), 0755);
  ::chmod((dir + "/bin").c_str(), 0755);
  ::chmod(standin.state.c_str(), 0777);  // the stand-in runs as the job's user
  {
    std::ofstream out(standin.program);
    out << "#!/bin/sh\n# A stand-in for nsys (tests only): tests/agent/nsys_standin.py\nexec /usr/bin/python3 "
        << FLEETPROF_SOURCE_DIR << "/tests/agent/nsys_standin.py --state " << standin.state << " --source " << source
        << " " << extra << " \"$@\"\n";
  }
  ::chmod(standin.program.c_str(), 0755);
  return standin;
}

}  // namespace fleetprof::testing
