#include "tests/jobtrace/rank_traces.h"

#include <algorithm>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace fleetprof::testing {
namespace {

constexpr int64_t kBaseNs = 1'700'000'000'000'000'000;  // Kineto clocks: µs since the epoch

// A Kineto time (µs with three decimals) from ns, exactly.
// (Times above are relative to kBaseNs and written as absolute µs, as Kineto writes them.)
std::string Micros(int64_t ns) { return absl::StrFormat("%d.%03d", ns / 1000, ns % 1000); }

void Event(std::string* out, const char* cat, const std::string& name, int64_t pid, int64_t tid, int64_t start,
           int64_t dur, const std::string& args) {
  absl::StrAppend(out, out->back() == '[' ? "" : ",\n", R"({"ph":"X","cat":")", cat, R"(","name":")", name,
                  R"(","pid":)", pid, R"(,"tid":)", tid, R"(,"ts":)", Micros(kBaseNs + start), R"(,"dur":)", Micros(dur),
                  R"(,"args":{)", args, "}}");
}

}  // namespace

std::vector<RankTrace> GenerateRankTraces(const RankTraceOptions& o) {
  std::mt19937_64 rng(o.seed);
  auto uniform = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  std::vector<RankTrace> out(static_cast<size_t>(o.ranks));
  std::vector<std::string> bodies(out.size());
  for (int r = 0; r < o.ranks; ++r) {
    bodies[static_cast<size_t>(r)] = absl::StrCat(R"({"schemaVersion":1,"distributedInfo":{"backend":"nccl","rank":)", r,
                                                 R"(,"world_size":)", o.ranks, R"(},"traceEvents":[)");
  }
  int64_t t = 1'000'000;  // the true clock, ns after kBaseNs
  int64_t correlation = 1;
  int64_t step = 0, step_start = t;
  for (int k = 0; k < o.collectives; ++k) {
    // Every rank computes for a while (its own kernels), then joins the collective.
    std::vector<int64_t> arrive(out.size());
    for (size_t r = 0; r < out.size(); ++r) {
      int64_t at = t;
      std::string& body = bodies[r];
      const int64_t skew = r < o.skew_ns.size() ? o.skew_ns[r] : 0;
      for (int i = 0; i < o.kernels_per_gap; ++i) {
        const int64_t dur = uniform(20'000, 120'000);
        Event(&body, "cuda_runtime", "cudaLaunchKernel", 100 + static_cast<int64_t>(r), 1, at + skew - 5'000, 4'000,
              absl::StrCat(R"("correlation":)", correlation));
        Event(&body, "kernel", absl::StrCat("gemm_kernel_", i % 3), 0, 7, at + skew, dur,
              absl::StrCat(R"("device":)", r, R"(,"stream":7,"correlation":)", correlation));
        ++correlation;
        at += dur + uniform(1'000, 5'000);
      }
      if (static_cast<int>(r) == o.late_rank) at += o.late_ns;
      arrive[r] = at + uniform(0, 20'000);
    }
    const int64_t last = *std::max_element(arrive.begin(), arrive.end());
    const int64_t end = last + uniform(50'000, 150'000);
    for (size_t r = 0; r < out.size(); ++r) {
      const int64_t skew = r < o.skew_ns.size() ? o.skew_ns[r] : 0;
      const int64_t my_end = end + uniform(-o.jitter_ns, o.jitter_ns);
      const std::string name = o.mixed_nccl_names && r % 2 == 1
                                   ? "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
                                   : "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)";
      out[r].true_starts.push_back(arrive[r]);
      out[r].true_ends.push_back(my_end);
      if (r < o.skip_first.size() && k < o.skip_first[r]) continue;
      std::string& body = bodies[r];
      Event(&body, "user_annotation", "nccl:all_reduce", 100 + static_cast<int64_t>(r), 1, arrive[r] + skew - 8'000,
            6'000, "");
      Event(&body, "cuda_runtime", "cudaLaunchKernel", 100 + static_cast<int64_t>(r), 1, arrive[r] + skew - 2'000,
            1'500, absl::StrCat(R"("correlation":)", correlation));
      Event(&body, "kernel", name, 0, 20, arrive[r] + skew, my_end - arrive[r],
            absl::StrCat(R"("device":)", r, R"(,"stream":20,"correlation":)", correlation,
                         R"(,"In msg nelems":)", 1'000'000 + k, R"(,"dtype":"Float")"));
    }
    ++correlation;
    t = end + uniform(10'000, 40'000);
    if ((k + 1) % o.step_every == 0 || k + 1 == o.collectives) {
      for (size_t r = 0; r < out.size(); ++r) {
        const int64_t skew = r < o.skew_ns.size() ? o.skew_ns[r] : 0;
        Event(&bodies[r], "user_annotation", absl::StrCat("ProfilerStep#", step), 100 + static_cast<int64_t>(r), 1,
              step_start + skew, t - step_start - 1'000, "");
      }
      ++step;
      step_start = t;
    }
  }
  for (size_t r = 0; r < out.size(); ++r) {
    out[r].json = absl::StrCat(bodies[r], "]}\n");
  }
  return out;
}

}  // namespace fleetprof::testing
