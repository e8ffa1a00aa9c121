#include "diagnosis/rules.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "diagnosis/rule_support.h"

namespace fleetprof::diagnosis {
namespace {

struct RuleEntry {
  Rule rule;
  ProfileRuleFn profile = nullptr;
  JobRuleFn job = nullptr;
};

// Compiling while the job should be running: before its first step, or again after it.
std::vector<RuleEntry> CompilationRules() {
  return {
      {{"compile_before_first_step", RuleScope::kProfile, 1e9, 0, 1e13, false, "ns",
        "Compile spans are host events whose name contains 'compile' in any letter case but not "
        "'compiled' (which runs compiled code): XlaCompile, BackendCompile, jit_compile, compile_inner. "
        "Metric: their total time ending before the first step starts (before the first device activity "
        "when the profile has no steps).",
        "JAX keeps compilations of 1 s or more in its persistent cache "
        "(jax_persistent_cache_min_compile_time_secs = 1)"},
       CompileBeforeFirstStep},
      {{"recompilation", RuleScope::kProfile, 1, 1, 1e6, false, "compile spans",
        "Compile spans (as in compile_before_first_step) that start at or after the first step's start; "
        "overlapping spans count once. Needs steps.",
        "JAX's jax_log_compiles and torch._dynamo's recompile log report every compile after warm-up; "
        "one is worth a look"},
       Recompilation},
  };
}

// Devices without enough work: idle, under-used, or running kernels shorter than their launch.
std::vector<RuleEntry> DeviceActivityRules() {
  return {
      {{"device_idle", RuleScope::kProfile, 0.2, 0, 1, false, "share of the device span",
        "Per device, idle_ns / span_ns of the temporal breakdown (docs/analysis.md); the metric is the highest "
        "over devices. Evidence: that device's longest gaps between activity, at most 10, longest first.",
        "HTA's idle time breakdown measures this share; the gap list follows nsys analyze gpu_gaps. "
        "0.2 is fleetprof's default"},
       DeviceIdle},
      {{"low_device_utilization", RuleScope::kProfile, 0.5, 0, 1, true, "busy share of a chunk",
        "Each device's activity span is cut into 30 equal chunks; a chunk's utilization is the busy time "
        "(union of activity) inside it over its length. Metric: the lowest chunk utilization over devices. "
        "Evidence: the runs of chunks under the threshold, at most 10.",
        "nsys analyze gpu_time_util: 30 chunks, 50% threshold"},
       LowDeviceUtilization},
      {{"tiny_kernels", RuleScope::kProfile, 0.5, 0, 1, false, "share of kernels",
        "Kernels (compute and communication activity) that last less than the runtime call that launched "
        "them (matched on correlation id). Metric: their share of the kernels whose launch call is in the "
        "trace. Evidence: per device track, the range from the first to the last such kernel.",
        "HTA's kernel launch statistics flag kernels shorter than their launch; one half is fleetprof's "
        "default"},
       TinyKernels},
  };
}

// The host waiting on the device (syncs, copies back, pageable copies), and device memory near its limit.
std::vector<RuleEntry> HostAndMemoryRules() {
  return {
      {{"host_device_sync", RuleScope::kProfile, 1, 0.001, 1e6, false, "calls per step",
        "Host calls named cudaDeviceSynchronize, cudaStreamSynchronize, cudaEventSynchronize, "
        "hipDeviceSynchronize, hipStreamSynchronize, aten::item or aten::_local_scalar_dense that start "
        "inside a step; a call inside another such call of the same thread counts once. Metric: calls per "
        "step. Needs steps.",
        "The JAX GPU profiling guide and PyTorch's performance tuning guide: no host-device syncs in "
        "the training loop"},
       HostDeviceSync},
      {{"memcpy_between_steps", RuleScope::kProfile, 1, 0.001, 1e6, false, "copies per step",
        "Device-to-host copies (memory activity whose name contains DtoH, D2H or 'Device -> Host') that "
        "start inside a step: the host waits for them before the next step. Metric: copies per step. "
        "Needs steps.",
        "The JAX GPU profiling guide's float(loss) example: one copy per step already stalls it"},
       MemcpyBetweenSteps},
      {{"pageable_memcpy", RuleScope::kProfile, 1, 1, 1e9, false, "copies",
        "Memory activity whose name contains 'Pageable' (Kineto: 'Memcpy HtoD (Pageable -> Device)'): "
        "a copy from or to pageable host memory, which cannot overlap compute. Metric: their number.",
        "nsys analyze cuda_memcpy_async (asynchronous memcpy with pageable memory)"},
       PageableMemcpy},
      {{"memory_pressure", RuleScope::kProfile, 0.9, 0, 1, false, "share of device memory",
        "Per device, the peak of allocated bytes (memory[].peak_bytes, or the XSpace allocator's own "
        "peak when higher) over the device's memory (Kineto deviceProperties totalGlobalMem, else the "
        "capture's NVML memory_total_bytes). Devices of unknown capacity are not judged.",
        "fleetprof's default: near the limit PyTorch's caching allocator frees its cache and retries"},
       MemoryPressure},
  };
}

// Device time that nothing else overlaps: communication no compute covers, gaps while input loads.
std::vector<RuleEntry> OverlapRules() {
  return {
      {{"unoverlapped_communication", RuleScope::kProfile, 0.5, 0, 1, false, "share of communication time",
        "Per device, the part of the union of communication activity that the union of compute activity "
        "does not cover, over the communication union; the metric is the highest over devices. Evidence: "
        "the longest uncovered pieces, at most 10.",
        "HTA's comm_comp_overlap reports the covered share; one half uncovered is fleetprof's default"},
       UnoverlappedCommunication},
      {{"input_stall", RuleScope::kProfile, 0.1, 0, 10, false, "share of the median step",
        "Gaps in compute and communication activity (all devices together) within the steps' range during "
        "which the host is "
        "inside a data-loading scope (a host event whose name contains 'DataLoader', '_next_data' or "
        "'IteratorGetNext': enumerate(DataLoader)#…__next__, tf.data) or a host-to-device copy (memory "
        "activity named HtoD, H2D or 'Host -> Device') that starts outside every step runs. Metric: the "
        "longest such gap over the median step time. Needs two steps. Evidence: the longest gaps, at most 10.",
        "The input-bound training loop of PyTorch's and JAX's performance guides; 10% of a step is "
        "fleetprof's default"},
       InputStall},
  };
}

// The profile against its job's recent profiles, judged when it was committed.
std::vector<RuleEntry> HistoryRules() {
  return {
      {{"regression", RuleScope::kProfile, 0.05, 0.05, 100, false, "change over the baseline median",
        "Made when the profile is committed: its step time and each of its 20 largest kernels (total device "
        "time) and ops (total time), per step (per second of span without steps), against the same values of "
        "the job's last 20 profiles before it (at least 5): a value above the median by more than "
        "max(3 x 1.4826 x MAD, 5% of the median) is a regression record (fleetprof regressions). Metric: "
        "(now - median) / median. Evidence: the baseline's profiles.",
        "A robust z-score: 3 scaled median absolute deviations (1.4826 x MAD estimates one standard deviation "
        "of normal noise); 5% is fleetprof's floor for noiseless series"},
       Regression},
  };
}

// Rules over the ranks of a job rather than one profile.
std::vector<RuleEntry> JobRules() {
  return {
      {{"straggler_rank", RuleScope::kJob, 1.2, 1, 100, false, "ratio to the other ranks' median",
        "Per rank (the label rank, else Kineto distributedInfo rank, else the node), the median step time "
        "of its latest profile over the median of the other ranks' (so two ranks compare with each "
        "other); the metric is the highest ratio. Needs two ranks with steps.",
        "fleetprof's default: a rank 20% slower than the median of the others"},
       nullptr, StragglerRank},
      {{"late_rank", RuleScope::kJob, 0.5, 0, 1, false, "share of collective instances",
        "The collectives of the job's newest capture among the selected profiles (else the newest profile of "
        "each rank) matched across ranks on one clock (GET /api/v1/jobs/{job}/collectives). Per rank, the share "
        "of the matched instances it arrived at last: started after every other rank, later than the next "
        "one by more than the two clocks' uncertainty (a tie within it is nobody's). The metric is the "
        "highest share; at least 5 instances are needed. Evidence: up to 10 of its late instances, on that "
        "rank's own clock.",
        "fleetprof's default: the rank the others wait for at half of the collectives or more"},
       nullptr, LateRank},
  };
}

// Every rule, in the order each listing shows them (Rules(), DescribeRules, the unknown-rule
// error): the families above in this order, joined once.
const std::vector<RuleEntry>& Table() {
  static const auto* table = [] {
    auto* out = new std::vector<RuleEntry>;
    for (const std::vector<RuleEntry>& family :
         {CompilationRules(), DeviceActivityRules(), HostAndMemoryRules(), OverlapRules(), HistoryRules(),
          JobRules()}) {
      out->insert(out->end(), family.begin(), family.end());
    }
    return out;
  }();
  return *table;
}

}  // namespace

const std::vector<Rule>& Rules() {
  static const auto* rules = [] {
    auto* out = new std::vector<Rule>;
    for (const RuleEntry& e : Table()) out->push_back(e.rule);
    return out;
  }();
  return *rules;
}

absl::StatusOr<std::map<std::string, double>> ResolveThresholds(
    RuleScope scope, const google::protobuf::Map<std::string, double>& overrides) {
  std::map<std::string, double> thresholds;
  for (const Rule& r : Rules()) {
    if (r.scope == scope) thresholds[r.name] = r.threshold;
  }
  for (const auto& [name, value] : overrides) {
    // (A structured binding is not captured by a lambda before clang 16: compare a copy.)
    const std::string& wanted = name;
    auto rule = std::find_if(Rules().begin(), Rules().end(), [&](const Rule& r) { return wanted == r.name; });
    if (rule == Rules().end()) {
      std::string known;
      for (const Rule& r : Rules()) absl::StrAppend(&known, known.empty() ? "" : ", ", r.name);
      return absl::InvalidArgumentError(absl::StrCat("no rule '", name, "' (rules: ", known, ")"));
    }
    if (rule->scope != scope) {
      return absl::InvalidArgumentError(absl::StrCat(
          "rule '", name, "' is a ", rule->scope == RuleScope::kJob ? "job" : "profile",
          " rule: give ", rule->scope == RuleScope::kJob ? "a job" : "a profile", " to diagnose"));
    }
    if (!(value >= rule->min && value <= rule->max)) {  // also refuses NaN
      return absl::InvalidArgumentError(absl::StrCat("threshold of ", name, " must be between ", rule->min,
                                                     " and ", rule->max, " (", rule->unit, "), not ", value));
    }
    thresholds[name] = value;
  }
  return thresholds;
}

namespace {

void SortFindings(std::vector<v1::Finding>* findings) {
  std::stable_sort(findings->begin(), findings->end(), [](const v1::Finding& a, const v1::Finding& b) {
    const bool aw = a.severity() == "warning", bw = b.severity() == "warning";
    return aw != bw ? aw : a.rule() < b.rule();
  });
}

}  // namespace

std::vector<v1::Finding> DiagnoseProfile(const ProfileFacts& facts, const std::map<std::string, double>& thresholds) {
  std::vector<v1::Finding> findings;
  for (const RuleEntry& e : Table()) {
    if (e.profile == nullptr) continue;
    e.profile(facts, e.rule, thresholds.at(e.rule.name), &findings);
  }
  SortFindings(&findings);
  return findings;
}

std::vector<v1::Finding> DiagnoseJob(const JobFacts& facts, const std::map<std::string, double>& thresholds) {
  std::vector<v1::Finding> findings;
  for (const RuleEntry& e : Table()) {
    if (e.job == nullptr) continue;
    e.job(facts, e.rule, thresholds.at(e.rule.name), &findings);
  }
  SortFindings(&findings);
  return findings;
}

void DescribeRules(RuleScope scope, const std::map<std::string, double>& thresholds, v1::DiagnoseResponse* out) {
  for (const Rule& r : Rules()) {
    if (r.scope != scope) continue;
    v1::RuleInfo* info = out->add_rules();
    info->set_rule(r.name);
    info->set_scope(r.scope == RuleScope::kJob ? "job" : "profile");
    info->set_threshold(thresholds.at(r.name));
    info->set_min(r.min);
    info->set_max(r.max);
    info->set_unit(r.unit);
    info->set_comparison(r.below ? "below" : "at_or_above");
    info->set_definition(r.definition);
    info->set_source(r.source);
  }
}

}  // namespace fleetprof::diagnosis
