// The cost of one access check (auth/access_guard.h) beside the request it guards: median
// ns per AccessGuard::Authorize with a known token, with authentication off, and for the
// rule lookup alone, over 20 rounds of 100k calls each. bench/auth_overhead.sh measures the
// same end to end over HTTP.
//   access_check_bench

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <vector>

#include "auth/access_guard.h"
#include "api/access_policy.h"
#include "auth/token_hash.h"

namespace {

double MedianNsPerCall(const std::function<void()>& call) {
  constexpr int kRounds = 20, kCalls = 100000;
  std::vector<double> rounds;
  for (int r = 0; r < kRounds; ++r) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kCalls; ++i) call();
    rounds.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() /
                     kCalls);
  }
  std::sort(rounds.begin(), rounds.end());
  return rounds[rounds.size() / 2];
}

}  // namespace

int main() {
  char dir[] = "/tmp/fleetprof-access-bench-XXXXXX";
  if (mkdtemp(dir) == nullptr) return 1;
  const std::string tokens = std::string(dir) + "/tokens";
  {
    std::ofstream out(tokens);
    for (int i = 0; i < 1000; ++i) out << fleetprof::Sha256Hex("token-" + std::to_string(i)) << " read p" << i << "\n";
  }
  auto guard = fleetprof::AccessGuard::FromTokensFile(tokens);
  unlink(tokens.c_str());
  rmdir(dir);
  if (!guard.ok()) return 1;
  fleetprof::AccessGuard off;
  volatile bool sink = false;
  const double on_ns = MedianNsPerCall([&] { sink = (*guard)->Authorize("Bearer token-517", fleetprof::Scope::kRead).ok(); });
  const double off_ns = MedianNsPerCall([&] { sink = off.Authorize("", fleetprof::Scope::kRead).ok(); });
  const double rule_ns = MedianNsPerCall([&] { sink = !fleetprof::RuleForHttp("GET", "/api/v1/profiles/x/ops").is_public; });
  std::printf("Authorize, known token of 1000          %8.0f ns/call\n", on_ns);
  std::printf("Authorize, authentication off (baseline) %8.0f ns/call  (on/off %.1fx)\n", off_ns, on_ns / off_ns);
  std::printf("RuleForHttp                              %8.0f ns/call\n", rule_ns);
  return 0;
}
