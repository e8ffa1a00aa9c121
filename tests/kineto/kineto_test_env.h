#pragma once
// Where the Kineto tests find their real processes, and how they start the stand-ins.
// The paths come from tests/kineto/CMakeLists.txt.

#include <memory>
#include <string>
#include <vector>

#include "tests/kineto/script_process.h"
#include "tests/test_support.h"

namespace fleetprof::testing {

inline const std::string kPython = KINETO_TEST_PYTHON;
inline const std::string kKinetoStandin = KINETO_STANDIN_PY;
inline const std::string kDynoStandin = DYNO_STANDIN_PY;
// A small real trace the fake PyTorch process writes when asked.
inline std::string StandinCorpusTrace() { return CorpusPath("kineto/a100_alexnet.json.gz"); }

// The whole contents of a gzip file, or "" when unreadable.
std::string GunzipFile(const std::string& path);

// Starts kineto_standin.py polling every 50 ms against `socket_dir` ("" = the abstract
// address), with `extra` arguments; its output goes to `log_dir`/`name`.log. Optionally runs
// it under `/bin/sh -c` so that the shell is its parent (for ancestry matching).
std::unique_ptr<ScriptProcess> StartKinetoStandin(const std::string& socket_dir,
                                                  const std::string& log_dir,
                                                  const std::string& name,
                                                  std::vector<std::string> extra = {},
                                                  std::map<std::string, std::string> env = {},
                                                  bool under_shell = false);

// Runs dyno_standin.py against 127.0.0.1:`port` with `args`; returns its stdout (the reply
// JSON) and fails the test when it exits non-zero.
std::string RunDynoStandin(int port, const std::vector<std::string>& args,
                           const std::string& log_dir);

}  // namespace fleetprof::testing
