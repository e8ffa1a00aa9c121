#include "tests/kineto/kineto_test_env.h"

#include <zlib.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace fleetprof::testing {

std::string GunzipFile(const std::string& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) return "";
  std::string out;
  char buffer[1 << 16];
  int n;
  while ((n = gzread(file, buffer, sizeof(buffer))) > 0) out.append(buffer, n);
  gzclose(file);
  return out;
}

std::unique_ptr<ScriptProcess> StartKinetoStandin(const std::string& socket_dir,
                                                  const std::string& log_dir,
                                                  const std::string& name,
                                                  std::vector<std::string> extra,
                                                  std::map<std::string, std::string> env,
                                                  bool under_shell) {
  std::vector<std::string> argv = {kPython, "-u", kKinetoStandin, "--interval-ms", "50"};
  if (!socket_dir.empty()) {
    argv.push_back("--socket-dir");
    argv.push_back(socket_dir);
  }
  argv.insert(argv.end(), extra.begin(), extra.end());
  if (under_shell) {
    // `; exit $?` keeps the shell from exec'ing the interpreter: it stays the parent.
    std::vector<std::string> quoted;
    for (const std::string& arg : argv) quoted.push_back(absl::StrCat("'", arg, "'"));
    argv = {"/bin/sh", "-c", absl::StrCat(absl::StrJoin(quoted, " "), "; exit $?")};
  }
  auto process = std::make_unique<ScriptProcess>();
  EXPECT_TRUE(process->Start(argv, absl::StrCat(log_dir, "/", name, ".log"), env))
      << "cannot start " << argv[0];
  return process;
}

std::string RunDynoStandin(int port, const std::vector<std::string>& args,
                           const std::string& log_dir) {
  std::vector<std::string> argv = {kPython, kDynoStandin, "--port", absl::StrCat(port)};
  argv.insert(argv.end(), args.begin(), args.end());
  ScriptProcess dyno;
  const std::string log = absl::StrCat(log_dir, "/dyno.log");
  EXPECT_TRUE(dyno.Start(argv, log));
  const int code = dyno.Wait(std::chrono::seconds(30));
  const std::string output = dyno.Output();
  EXPECT_EQ(code, 0) << "dyno stand-in failed: " << output;
  return output;
}

}  // namespace fleetprof::testing
