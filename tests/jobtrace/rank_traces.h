#pragma once
// Generated multi-rank Kineto traces with known truth: per-rank clock skews, collective
// jitter, one late rank. The job timeline's tests and benchmark compare what fleetprof
// recovers with what was injected.

#include <cstdint>
#include <string>
#include <vector>

namespace fleetprof::testing {

struct RankTraceOptions {
  int ranks = 4;
  int collectives = 200;        // per rank, on one NCCL stream
  int kernels_per_gap = 4;      // compute kernels before each collective
  std::vector<int64_t> skew_ns; // per rank: its clock = the true clock + skew (default 0)
  int late_rank = -1;           // arrives this much later at every collective
  int64_t late_ns = 400'000;
  int64_t jitter_ns = 3'000;    // each rank's collective end: the common end ± up to this
  uint64_t seed = 1;
  // Odd ranks name their kernels as NCCL >= 2.19 does (ncclDevKernel_AllReduce_Sum_f32_RING_LL),
  // even ranks as older NCCL (ncclKernel_AllReduce_RING_LL_Sum_float).
  bool mixed_nccl_names = true;
  // Per rank: its trace leaves out its first n collectives (a trace that starts later).
  std::vector<int> skip_first;
  int64_t step_every = 10;      // a ProfilerStep#N host scope per this many collectives
};

struct RankTrace {
  std::string json;             // a Kineto trace file
  // The true (unskewed) end and start of each collective, in ns, including skipped ones.
  std::vector<int64_t> true_ends;
  std::vector<int64_t> true_starts;
};

// The traces of every rank of one run: options.ranks of them.
std::vector<RankTrace> GenerateRankTraces(const RankTraceOptions& options);

}  // namespace fleetprof::testing
