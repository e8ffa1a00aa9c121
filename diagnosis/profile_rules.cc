// The profile rules of the table in rules.cc; each definition is written there once.
#include <algorithm>
#include <functional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analysis/trace_summary.h"
#include "diagnosis/rule_support.h"

namespace fleetprof::diagnosis {
namespace {

using analysis::ActivityKind;

constexpr size_t kMaxEvidence = 10;
constexpr int kUtilizationChunks = 30;  // nsys analyze gpu_time_util

bool IsKind(const DeviceOp& op, ActivityKind kind) { return op.kind == static_cast<uint8_t>(kind); }

// A per-name yes/no, decided once per distinct name id.
class NameTest {
 public:
  template <typename Test>
  NameTest(const ProfileFacts& facts, Test test)
      : facts_(facts), test_(std::move(test)), cache_(facts.timeline ? facts.timeline->names() : 0, -1) {}
  bool operator()(uint32_t name) {
    if (cache_[name] < 0) cache_[name] = test_(facts_.name(name)) ? 1 : 0;
    return cache_[name] == 1;
  }

 private:
  const ProfileFacts& facts_;
  std::function<bool(std::string_view)> test_;
  std::vector<int8_t> cache_;
};

bool IsCompileName(std::string_view name) {
  const std::string lower = absl::AsciiStrToLower(std::string(name));
  return lower.find("compile") != std::string::npos && lower.find("compiled") == std::string::npos;
}

// Keeps the `n` longest intervals, longest first.
std::vector<Interval> Longest(std::vector<Interval> v, size_t n) {
  std::sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) {
    return a.end - a.start != b.end - b.start ? a.end - a.start > b.end - b.start : a.start < b.start;
  });
  if (v.size() > n) v.resize(n);
  return v;
}

std::vector<Interval> CompileSpans(const ProfileFacts& facts) {
  NameTest compile(facts, IsCompileName);
  std::vector<Interval> spans;
  for (const HostOp& h : facts.host_ops) {
    if (compile(h.name)) spans.push_back(Interval{h.start_ns, h.end_ns(), h.track});
  }
  return spans;
}

// Where "before the first step" ends: the first step, else the first device activity.
bool FirstStepStart(const ProfileFacts& facts, int64_t* start) {
  const std::vector<Interval> steps = StepWindows(facts);
  if (!steps.empty()) {
    *start = steps.front().start;
    return true;
  }
  if (facts.device_ops.empty()) return false;
  *start = facts.device_ops.front().start_ns;
  return true;
}

// Per device (index into facts.devices), its activity as merged intervals, optionally of one kind.
std::vector<std::vector<Interval>> DeviceUnions(const ProfileFacts& facts, int kind = -1) {
  std::vector<std::vector<Interval>> per_device(facts.devices.size());
  for (const DeviceOp& op : facts.device_ops) {
    if (kind >= 0 && op.kind != kind) continue;
    per_device[op.device].push_back(Interval{op.start_ns, op.end_ns(), op.track});
  }
  for (auto& v : per_device) v = Union(std::move(v));
  return per_device;
}

}  // namespace

void CompileBeforeFirstStep(const ProfileFacts& facts, const Rule& rule, double threshold,
                            std::vector<v1::Finding>* out) {
  int64_t first = 0;
  if (!FirstStepStart(facts, &first)) return;
  std::vector<Interval> before;
  for (Interval span : CompileSpans(facts)) {
    if (span.start >= first) continue;
    span.end = std::min(span.end, first);
    before.push_back(span);
  }
  before = Union(std::move(before));
  const int64_t total = TotalLength(before);
  if (total <= 0 || static_cast<double>(total) < threshold) return;
  v1::Finding f = NewFinding(rule, static_cast<double>(total), threshold,
                             absl::StrCat(HumanNs(total), " of compilation before the first step"),
                             "Cache compilations across runs (JAX: jax_compilation_cache_dir; torch.compile: "
                             "mode and dynamic=False to avoid guards), warm up before profiling, or compile "
                             "ahead of time.");
  for (const Interval& i : Longest(before, kMaxEvidence)) AddEvidence(&f, facts.track_id(i.track), i.start, i.end);
  out->push_back(std::move(f));
}

void Recompilation(const ProfileFacts& facts, const Rule& rule, double threshold, std::vector<v1::Finding>* out) {
  const std::vector<Interval> steps = StepWindows(facts);
  if (steps.empty()) return;
  std::vector<Interval> after;
  for (const Interval& span : CompileSpans(facts)) {
    if (span.start >= steps.front().start) after.push_back(span);
  }
  after = Union(std::move(after));
  const auto count = static_cast<int64_t>(after.size());
  if (count == 0 || static_cast<double>(count) < threshold) return;
  v1::Finding f = NewFinding(rule, static_cast<double>(count), threshold,
                             absl::StrCat(count, " compilation", count == 1 ? "" : "s", " after the first step (",
                                          HumanNs(TotalLength(after)), ")"),
                             "Something changes between steps: input shapes (pad or bucket them), dtypes, "
                             "Python scalars passed as arguments (mark them static or make them arrays), or "
                             "torch.compile guards (see TORCH_LOGS=recompiles).");
  for (const Interval& i : Longest(after, kMaxEvidence)) AddEvidence(&f, facts.track_id(i.track), i.start, i.end);
  out->push_back(std::move(f));
}

void DeviceIdle(const ProfileFacts& facts, const Rule& rule, double threshold, std::vector<v1::Finding>* out) {
  const v1::DeviceBreakdown* worst = nullptr;
  double worst_share = 0;
  for (const v1::DeviceBreakdown& d : facts.summary.devices()) {
    if (d.span_ns() <= 0) continue;
    const double share = static_cast<double>(d.idle_ns()) / static_cast<double>(d.span_ns());
    if (worst == nullptr || share > worst_share) worst = &d, worst_share = share;
  }
  if (worst == nullptr || worst_share <= 0 || worst_share < threshold) return;
  v1::Finding f = NewFinding(
      rule, worst_share, threshold,
      absl::StrCat("device ", worst->device(), " is idle ", Percent(worst_share), " of its span (",
                   HumanNs(worst->idle_ns()), " of ", HumanNs(worst->span_ns()), ")"),
      "The device waits for the host: look at what the host does in the longest gaps (data loading, "
      "Python overhead, synchronization). Larger batches, a prefetching input pipeline, CUDA graphs or "
      "compiling the step (jit / torch.compile) keep it fed.");
  const auto device = std::find(facts.devices.begin(), facts.devices.end(), worst->device());
  if (device != facts.devices.end()) {
    const auto index = static_cast<size_t>(device - facts.devices.begin());
    const std::vector<Interval> busy = DeviceUnions(facts)[index];
    std::vector<Interval> gaps;
    for (size_t i = 1; i < busy.size(); ++i) gaps.push_back(Interval{busy[i - 1].end, busy[i].start, busy[i - 1].track});
    for (const Interval& g : Longest(gaps, kMaxEvidence)) {
      AddEvidence(&f, facts.track_id(g.track), g.start, g.end, "no activity on the device");
    }
  }
  out->push_back(std::move(f));
}

void LowDeviceUtilization(const ProfileFacts& facts, const Rule& rule, double threshold,
                          std::vector<v1::Finding>* out) {
  double lowest = 1.0;
  size_t lowest_device = 0;
  std::vector<Interval> low_runs;  // of the lowest device
  const std::vector<std::vector<Interval>> unions = DeviceUnions(facts);
  for (size_t d = 0; d < unions.size(); ++d) {
    const std::vector<Interval>& busy = unions[d];
    if (busy.empty()) continue;
    const int64_t start = busy.front().start, end = busy.back().end;
    if (end - start < kUtilizationChunks) continue;  // too short to cut
    std::vector<Interval> runs;
    double device_lowest = 1.0;
    size_t j = 0;
    for (int c = 0; c < kUtilizationChunks; ++c) {
      const int64_t cs = start + (end - start) * c / kUtilizationChunks;
      const int64_t ce = start + (end - start) * (c + 1) / kUtilizationChunks;
      while (j < busy.size() && busy[j].end <= cs) ++j;
      int64_t covered = 0;
      for (size_t k = j; k < busy.size() && busy[k].start < ce; ++k) {
        covered += std::min(busy[k].end, ce) - std::max(busy[k].start, cs);
      }
      const double util = static_cast<double>(covered) / static_cast<double>(ce - cs);
      device_lowest = std::min(device_lowest, util);
      if (util >= threshold) continue;
      const uint32_t track = busy[std::min(j, busy.size() - 1)].track;
      if (!runs.empty() && runs.back().end == cs) {
        runs.back().end = ce;
      } else {
        runs.push_back(Interval{cs, ce, track});
      }
    }
    if (!runs.empty() && (low_runs.empty() || device_lowest < lowest)) {
      lowest = device_lowest, lowest_device = d, low_runs = std::move(runs);
    }
  }
  if (low_runs.empty() || lowest >= threshold) return;
  v1::Finding f = NewFinding(
      rule, lowest, threshold,
      absl::StrCat("device ", facts.devices[lowest_device], " has chunks of its span under ", Percent(threshold),
                   " busy (lowest ", Percent(lowest), ", ", low_runs.size(), " stretch",
                   low_runs.size() == 1 ? "" : "es", ")"),
      "Open the stretches in the trace viewer: a stretch at the start is often warm-up or input "
      "loading; stretches that repeat every step point at host work between steps.");
  for (const Interval& r : Longest(low_runs, kMaxEvidence)) AddEvidence(&f, facts.track_id(r.track), r.start, r.end);
  out->push_back(std::move(f));
}

void TinyKernels(const ProfileFacts& facts, const Rule& rule, double threshold, std::vector<v1::Finding>* out) {
  absl::flat_hash_map<int64_t, int64_t> launch_ns;  // correlation -> longest launch call
  for (const HostOp& h : facts.host_ops) {
    if (!h.is_runtime || !h.has_correlation) continue;
    int64_t& d = launch_ns[h.correlation];
    d = std::max(d, h.dur_ns);
  }
  if (launch_ns.empty()) return;
  int64_t kernels = 0, tiny = 0;
  absl::flat_hash_map<uint32_t, std::pair<Interval, int64_t>> per_track;  // range, count
  for (const DeviceOp& op : facts.device_ops) {
    if (IsKind(op, ActivityKind::kMemory) || !op.has_correlation) continue;
    auto it = launch_ns.find(op.correlation);
    if (it == launch_ns.end()) continue;
    ++kernels;
    if (op.dur_ns >= it->second) continue;
    ++tiny;
    auto [t, added] = per_track.try_emplace(op.track, std::make_pair(Interval{op.start_ns, op.end_ns(), op.track}, 0));
    t->second.first.end = std::max(t->second.first.end, op.end_ns());
    ++t->second.second;
  }
  if (kernels == 0) return;
  const double share = static_cast<double>(tiny) / static_cast<double>(kernels);
  if (tiny == 0 || share < threshold) return;
  v1::Finding f = NewFinding(rule, share, threshold,
                             absl::StrCat(tiny, " of ", kernels, " kernels (", Percent(share),
                                          ") are shorter than the call that launched them"),
                             "The host cannot launch fast enough to keep the device busy: fuse small ops "
                             "(torch.compile, jax.jit, fused optimizers), use CUDA graphs, or give each "
                             "kernel more work (larger batches).");
  std::vector<std::pair<Interval, int64_t>> tracks;
  for (const auto& [track, entry] : per_track) tracks.push_back(entry);
  std::sort(tracks.begin(), tracks.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first.track < b.first.track;
  });
  if (tracks.size() > kMaxEvidence) tracks.resize(kMaxEvidence);
  for (const auto& [range, count] : tracks) {
    AddEvidence(&f, facts.track_id(range.track), range.start, range.end, absl::StrCat(count, " tiny kernels"));
  }
  out->push_back(std::move(f));
}

void HostDeviceSync(const ProfileFacts& facts, const Rule& rule, double threshold, std::vector<v1::Finding>* out) {
  const std::vector<Interval> steps = StepWindows(facts);
  if (steps.empty()) return;
  NameTest sync(facts, [](std::string_view n) {
    return n == "cudaDeviceSynchronize" || n == "cudaStreamSynchronize" || n == "cudaEventSynchronize" ||
           n == "hipDeviceSynchronize" || n == "hipStreamSynchronize" || n == "aten::item" ||
           n == "aten::_local_scalar_dense";
  });
  absl::flat_hash_map<uint32_t, int64_t> open_until;  // track -> end of the last counted call
  std::vector<Interval> calls;
  for (const HostOp& h : facts.host_ops) {
    if (!sync(h.name) || !InsideAny(steps, h.start_ns)) continue;
    auto [until, first] = open_until.try_emplace(h.track, h.end_ns());
    if (!first) {
      if (h.start_ns < until->second) continue;  // inside a counted call of this thread
      until->second = h.end_ns();
    }
    calls.push_back(Interval{h.start_ns, h.end_ns(), h.track, h.name});
  }
  const double per_step = static_cast<double>(calls.size()) / static_cast<double>(steps.size());
  if (calls.empty() || per_step < threshold) return;
  v1::Finding f = NewFinding(
      rule, per_step, threshold,
      absl::StrCat(calls.size(), " host-device synchronizations in ", steps.size(), " steps (",
                   absl::StrFormat("%.2f", per_step), " per step)"),
      "Each one makes the host wait until the device has finished: keep values on the device (log "
      "the loss every N steps, avoid .item(), float(), .cpu() and printing tensors in the loop).");
  for (const Interval& c : Longest(calls, kMaxEvidence)) {
    AddEvidence(&f, facts.track_id(c.track), c.start, c.end, std::string(facts.name(c.name)));
  }
  out->push_back(std::move(f));
}

void MemcpyBetweenSteps(const ProfileFacts& facts, const Rule& rule, double threshold,
                        std::vector<v1::Finding>* out) {
  const std::vector<Interval> steps = StepWindows(facts);
  if (steps.empty()) return;
  NameTest to_host(facts, [](std::string_view n) {
    return n.find("DtoH") != n.npos || n.find("D2H") != n.npos || n.find("Device -> Host") != n.npos;
  });
  std::vector<Interval> copies;
  for (const DeviceOp& op : facts.device_ops) {
    if (IsKind(op, ActivityKind::kMemory) && to_host(op.name) && InsideAny(steps, op.start_ns)) {
      copies.push_back(Interval{op.start_ns, op.end_ns(), op.track});
    }
  }
  const double per_step = static_cast<double>(copies.size()) / static_cast<double>(steps.size());
  if (copies.empty() || per_step < threshold) return;
  v1::Finding f = NewFinding(rule, per_step, threshold,
                             absl::StrCat(copies.size(), " device-to-host copies in ", steps.size(), " steps (",
                                          absl::StrFormat("%.2f", per_step), " per step)"),
                             "A copy to the host inside the loop (float(loss), .item(), metrics) waits for "
                             "the device: accumulate on the device and read it every N steps.");
  for (const Interval& c : Longest(copies, kMaxEvidence)) AddEvidence(&f, facts.track_id(c.track), c.start, c.end);
  out->push_back(std::move(f));
}

void PageableMemcpy(const ProfileFacts& facts, const Rule& rule, double threshold, std::vector<v1::Finding>* out) {
  NameTest pageable(facts, [](std::string_view n) { return n.find("Pageable") != n.npos; });
  std::vector<Interval> copies;
  int64_t total = 0;
  for (const DeviceOp& op : facts.device_ops) {
    if (IsKind(op, ActivityKind::kMemory) && pageable(op.name)) {
      copies.push_back(Interval{op.start_ns, op.end_ns(), op.track});
      total += op.dur_ns;
    }
  }
  if (copies.empty() || static_cast<double>(copies.size()) < threshold) return;
  v1::Finding f = NewFinding(rule, static_cast<double>(copies.size()), threshold,
                             absl::StrCat(copies.size(), " copies from or to pageable host memory (",
                                          HumanNs(total), ")"),
                             "Pin the host buffers (DataLoader(pin_memory=True), tensor.pin_memory()) and copy "
                             "with non_blocking=True so copies overlap compute.");
  f.set_severity("info");
  for (const Interval& c : Longest(copies, kMaxEvidence)) AddEvidence(&f, facts.track_id(c.track), c.start, c.end);
  out->push_back(std::move(f));
}

void MemoryPressure(const ProfileFacts& facts, const Rule& rule, double threshold, std::vector<v1::Finding>* out) {
  const auto& metadata = facts.summary.metadata();
  const v1::DeviceMemory* worst = nullptr;
  double worst_share = 0;
  int64_t worst_capacity = 0;
  for (const v1::DeviceMemory& m : facts.summary.memory()) {
    int64_t capacity = 0;
    if (auto it = metadata.find(absl::StrCat("device.", m.device(), ".total_global_mem")); it != metadata.end()) {
      if (!absl::SimpleAtoi(it->second, &capacity)) capacity = 0;
    }
    for (const v1::DeviceSample& s : facts.summary.device_samples()) {
      if (capacity == 0 && s.device() == m.device()) capacity = std::max(capacity, s.memory_total_bytes());
    }
    if (capacity <= 0) continue;
    const int64_t peak = std::max(m.peak_bytes(), m.has_allocator_peak_bytes() ? m.allocator_peak_bytes() : 0);
    const double share = static_cast<double>(peak) / static_cast<double>(capacity);
    if (worst == nullptr || share > worst_share) worst = &m, worst_share = share, worst_capacity = capacity;
  }
  if (worst == nullptr || worst_share <= 0 || worst_share < threshold) return;
  v1::Finding f = NewFinding(
      rule, worst_share, threshold,
      absl::StrCat("device ", worst->device(), " peaks at ", Percent(worst_share), " of its memory (",
                   std::max(worst->peak_bytes(), worst->allocator_peak_bytes()) >> 20, " of ",
                   worst_capacity >> 20, " MiB)"),
      "Close to the limit the allocator frees its cache and retries, and the next larger input fails: "
      "reduce the batch, use activation checkpointing, lower precision, or shard the model.");
  AddEvidence(&f, absl::StrCat("counter:memory/", worst->device()), worst->peak_ns(), worst->peak_ns() + 1, "peak");
  out->push_back(std::move(f));
}

void UnoverlappedCommunication(const ProfileFacts& facts, const Rule& rule, double threshold,
                               std::vector<v1::Finding>* out) {
  const auto comm = DeviceUnions(facts, static_cast<int>(ActivityKind::kCommunication));
  const auto compute = DeviceUnions(facts, static_cast<int>(ActivityKind::kCompute));
  double worst_share = 0;
  size_t worst = facts.devices.size();
  std::vector<Interval> worst_pieces;
  int64_t worst_comm = 0;
  for (size_t d = 0; d < comm.size(); ++d) {
    const int64_t comm_ns = TotalLength(comm[d]);
    if (comm_ns <= 0) continue;
    std::vector<Interval> uncovered = Subtract(comm[d], compute[d]);
    const double share = static_cast<double>(TotalLength(uncovered)) / static_cast<double>(comm_ns);
    if (worst == facts.devices.size() || share > worst_share) {
      worst = d, worst_share = share, worst_pieces = std::move(uncovered), worst_comm = comm_ns;
    }
  }
  if (worst == facts.devices.size() || worst_share <= 0 || worst_share < threshold) return;
  v1::Finding f = NewFinding(
      rule, worst_share, threshold,
      absl::StrCat(Percent(worst_share), " of device ", facts.devices[worst], "'s communication (",
                   HumanNs(worst_comm), ") runs with no compute beside it"),
      "Overlap collectives with compute: bucketed gradient all-reduce during backward (DDP buckets, FSDP "
      "prefetch), async collectives, or XLA's latency-hiding scheduler.");
  for (const Interval& p : Longest(worst_pieces, kMaxEvidence)) AddEvidence(&f, facts.track_id(p.track), p.start, p.end);
  out->push_back(std::move(f));
}

void InputStall(const ProfileFacts& facts, const Rule& rule, double threshold, std::vector<v1::Finding>* out) {
  const std::vector<Interval> steps = StepWindows(facts);
  if (steps.size() < 2) return;
  std::vector<int64_t> lengths;
  for (const Interval& s : steps) lengths.push_back(s.end - s.start);
  std::nth_element(lengths.begin(), lengths.begin() + static_cast<std::ptrdiff_t>(lengths.size() / 2), lengths.end());
  const int64_t median = lengths[lengths.size() / 2];
  if (median <= 0) return;
  NameTest loading(facts, [](std::string_view n) {
    return n.find("DataLoader") != std::string_view::npos || n.find("_next_data") != std::string_view::npos ||
           n.find("IteratorGetNext") != std::string_view::npos;
  });
  NameTest to_device(facts, [](std::string_view n) {
    return n.find("HtoD") != std::string_view::npos || n.find("H2D") != std::string_view::npos ||
           n.find("Host -> Device") != std::string_view::npos;
  });
  std::vector<Interval> loads, copies, busy;
  for (const HostOp& h : facts.host_ops) {
    if (loading(h.name)) loads.push_back(Interval{h.start_ns, h.end_ns(), h.track});
  }
  for (const DeviceOp& d : facts.device_ops) {
    // Copies are what the device may wait for, so they do not count as keeping it busy.
    if (!IsKind(d, ActivityKind::kMemory)) busy.push_back(Interval{d.start_ns, d.end_ns(), d.track});
    else if (to_device(d.name) && !InsideAny(steps, d.start_ns)) {
      copies.push_back(Interval{d.start_ns, d.end_ns(), d.track});
    }
  }
  loads = Union(std::move(loads));
  copies = Union(std::move(copies));
  busy = Union(std::move(busy));
  auto overlaps = [](const std::vector<Interval>& sorted, int64_t start, int64_t end) {
    auto it = std::upper_bound(sorted.begin(), sorted.end(), start, [](int64_t v, const Interval& i) { return v < i.end; });
    return it != sorted.end() && it->start < end;
  };
  // Gaps between device activity inside [first step start, last step end); the cause in `name`.
  std::vector<Interval> stalls;
  const int64_t first = steps.front().start, last = steps.back().end;
  for (size_t i = 1; i < busy.size(); ++i) {
    const int64_t start = std::max(busy[i - 1].end, first), end = std::min(busy[i].start, last);
    if (end <= start) continue;
    if (overlaps(loads, start, end)) stalls.push_back(Interval{start, end, busy[i - 1].track, 0});
    else if (overlaps(copies, start, end)) stalls.push_back(Interval{start, end, busy[i - 1].track, 1});
  }
  if (stalls.empty()) return;
  const std::vector<Interval> longest = Longest(stalls, kMaxEvidence);
  const double metric = static_cast<double>(longest.front().end - longest.front().start) / static_cast<double>(median);
  if (metric < threshold) return;
  int64_t total = 0;
  for (const Interval& g : stalls) total += g.end - g.start;
  v1::Finding f = NewFinding(
      rule, metric, threshold,
      absl::StrCat("the device waits for input: ", stalls.size(), " gaps (", HumanNs(total),
                   " in all) while the host loads data or copies it in; the longest is ", HumanNs(longest.front().end - longest.front().start),
                   ", ", absl::StrFormat("%.2f", metric), "x the median step (", HumanNs(median), ")"),
      "Feed the device ahead of time: DataLoader(num_workers>0, pin_memory=True, prefetch_factor) and "
      "non_blocking copies in PyTorch; a prefetching tf.data / grain pipeline and jax.device_put of the "
      "next batch in JAX.");
  for (const Interval& g : longest) {
    AddEvidence(&f, facts.track_id(g.track), g.start, g.end,
                g.name == 0 ? "device idle while the host is in data loading"
                            : "device idle while a host-to-device copy outside the steps runs");
  }
  out->push_back(std::move(f));
}

}  // namespace fleetprof::diagnosis
