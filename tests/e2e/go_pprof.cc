#include "tests/e2e/go_pprof.h"

#include <filesystem>
#include <regex>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "tests/e2e/process_runner.h"

namespace fleetprof::testing {

std::string GoBinary() {
  for (const char* candidate : {"/usr/bin/go", "/usr/lib/go/bin/go", "/usr/local/go/bin/go"}) {
    if (std::filesystem::exists(candidate)) return candidate;
  }
  return "";
}

absl::StatusOr<int64_t> GoPprofTotal(const std::string& file, const std::string& sample_index) {
  const std::string go = GoBinary();
  if (go.empty()) return absl::NotFoundError("go is not installed");
  const std::string home = MakeTempDir();
  CommandResult r = RunCommand({"/usr/bin/env", "HOME=" + home, "GOCACHE=" + home + "/gocache",
                                "GOPATH=" + home + "/gopath", "PPROF_TMPDIR=" + home, go, "tool", "pprof", "-top",
                                "-unit=ns", "-sample_index=" + sample_index, file},
                               120);
  std::error_code ec;
  std::filesystem::remove_all(home, ec);
  if (r.exit_code != 0) {
    return absl::InternalError(absl::StrCat("go tool pprof exited ", r.exit_code, ": ", r.err, r.out));
  }
  // "Showing nodes accounting for 123ns, 100% of 123ns total"
  static const std::regex kTotal(R"(of (-?[0-9]+)(ns)? total)");
  std::smatch m;
  const std::string text = r.out + r.err;
  if (!std::regex_search(text, m, kTotal)) return absl::InternalError("no total in go tool pprof's output: " + text);
  int64_t total;
  if (!absl::SimpleAtoi(m[1].str(), &total)) return absl::InternalError("bad total: " + m[1].str());
  return total;
}

}  // namespace fleetprof::testing
