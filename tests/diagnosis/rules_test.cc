// Each diagnosis rule on generated Kineto traces: a positive one (the pattern injected at a
// known time: the finding's evidence covers it) and a negative one (no finding), through the
// same path as the server: analysis -> event store -> ProfileFacts -> rules.

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "analysis/trace_analyzer.h"
#include "diagnosis/profile_facts.h"
#include "diagnosis/rules.h"
#include "gtest/gtest.h"
#include "proto/summary_codec.h"
#include "tests/timeline/memory_timeline_store.h"
#include "timeline/timeline_builder.h"

namespace fleetprof::diagnosis {
namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kUs = 1'000;
constexpr int64_t kGiB = int64_t{1} << 30;
constexpr int64_t kT0 = 1'000'000 * kMs;  // an arbitrary trace start (1000 s)

// Kineto timestamps are µs with a decimal fraction; these traces use whole ns.
std::string Us(int64_t ns) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%" PRId64 ".%03" PRId64, ns / 1000, ns % 1000);
  return buf;
}

// A Kineto trace written event by event.
class TraceGen {
 public:
  void Host(const std::string& name, const std::string& cat, int64_t start, int64_t dur, int64_t correlation = -1) {
    std::string args = correlation >= 0 ? absl::StrCat(R"(,"args":{"correlation":)", correlation, "}") : "";
    events_.push_back(absl::StrCat(R"({"ph":"X","cat":")", cat, R"(","name":")", name, R"(","pid":100,"tid":1,"ts":)",
                                   Us(start), R"(,"dur":)", Us(dur), args, "}"));
  }
  void Device(const std::string& name, const std::string& cat, int64_t start, int64_t dur, int stream,
              int64_t correlation = -1) {
    std::string corr = correlation >= 0 ? absl::StrCat(R"(,"correlation":)", correlation) : "";
    events_.push_back(absl::StrCat(R"({"ph":"X","cat":")", cat, R"(","name":")", name, R"(","pid":0,"tid":)", stream,
                                   R"(,"ts":)", Us(start), R"(,"dur":)", Us(dur), R"(,"args":{"device":0,"stream":)",
                                   stream, corr, "}}"));
  }
  // A launch call on the host and its kernel on the device, joined by a fresh correlation id.
  void Launch(int64_t start, int64_t launch_dur, int64_t kernel_start, int64_t kernel_dur,
              const std::string& kernel = "volta_sgemm_128x64_nn", int stream = 7) {
    const int64_t c = next_correlation_++;
    Host("cudaLaunchKernel", "cuda_runtime", start, launch_dur, c);
    Device(kernel, "kernel", kernel_start, kernel_dur, stream, c);
  }
  void Memory(int64_t ts, int64_t total) {
    events_.push_back(absl::StrCat(R"({"ph":"i","s":"t","name":"[memory]","pid":100,"tid":1,"ts":)", Us(ts),
                                   R"(,"args":{"Device Type":1,"Device Id":0,"Addr":1,"Bytes":1,"Total Allocated":)",
                                   total, R"(,"Total Reserved":)", total, "}}"));
  }
  // `n` steps of 10 ms from `start`, numbered from `first`: each launches ten 1 ms kernels
  // back to back (5 µs launch calls), so the device is busy all the time.
  void Steps(int64_t start, int n, int first = 1) {
    for (int i = 0; i < n; ++i) {
      const int64_t s = start + i * 10 * kMs;
      Host(absl::StrCat("ProfilerStep#", first + i), "user_annotation", s, 10 * kMs);
      for (int k = 0; k < 10; ++k) Launch(s + k * kMs, 5 * kUs, s + k * kMs, kMs);
    }
  }
  std::string Json(int64_t device_memory = 16 * kGiB) const {
    return absl::StrCat(R"({"schemaVersion":1,"deviceProperties":[{"id":0,"name":"Test GPU","totalGlobalMem":)",
                        device_memory, R"(}],"traceEvents":[)", absl::StrJoin(events_, ",\n"), "]}");
  }

 private:
  std::vector<std::string> events_;
  int64_t next_correlation_ = 1;
};

struct Diagnosis {
  std::vector<v1::Finding> findings;
  const v1::Finding* Find(const std::string& rule) const {
    for (const v1::Finding& f : findings) {
      if (f.rule() == rule) return &f;
    }
    return nullptr;
  }
};

Diagnosis Diagnose(const TraceGen& gen, std::map<std::string, double> overrides = {}) {
  timeline::testing::MemoryTimelineStore store;
  timeline::TimelineSink sink(&store);
  auto source = analysis::OpenStringSource("generated.json", gen.Json());
  auto summary = analysis::AnalyzeTrace(*source, analysis::TraceFormat::kKinetoJson, &sink);
  EXPECT_TRUE(summary.ok()) << summary.status();
  if (!summary.ok()) return {};
  auto timeline = timeline::Timeline::Load(store);
  EXPECT_TRUE(timeline.ok()) << timeline.status();
  if (!timeline.ok()) return {};
  auto facts = ReadProfileFacts("generated", SummaryToProto(*summary), *timeline, store);
  EXPECT_TRUE(facts.ok()) << facts.status();
  if (!facts.ok()) return {};
  google::protobuf::Map<std::string, double> map;
  for (const auto& [k, v] : overrides) map[k] = v;
  auto thresholds = ResolveThresholds(RuleScope::kProfile, map);
  EXPECT_TRUE(thresholds.ok()) << thresholds.status();
  return Diagnosis{DiagnoseProfile(*facts, *thresholds)};
}

// Some evidence range of `f` contains [start, end) (on `track`, when given).
bool EvidenceCovers(const v1::Finding& f, int64_t start, int64_t end, const std::string& track = "") {
  for (const v1::Evidence& e : f.evidence()) {
    if (!track.empty() && e.track() != track) continue;
    if (e.start_ns() <= start && e.end_ns() >= end) return true;
  }
  return false;
}

std::string Listed(const Diagnosis& d) {
  std::vector<std::string> names;
  for (const auto& f : d.findings) names.push_back(f.rule() + " (" + f.summary() + ")");
  return absl::StrJoin(names, "; ");
}

TEST(DiagnosisRules, AHealthyTraceHasNoFindings) {
  TraceGen gen;
  gen.Steps(kT0, 10);
  gen.Memory(kT0 + kMs, kGiB);
  Diagnosis d = Diagnose(gen);
  EXPECT_TRUE(d.findings.empty()) << Listed(d);
}

TEST(DiagnosisRules, CompileBeforeFirstStep) {
  TraceGen gen;
  gen.Host("XlaCompile", "cpu_op", kT0, 2000 * kMs);
  gen.Steps(kT0 + 2100 * kMs, 5);
  Diagnosis d = Diagnose(gen);
  const v1::Finding* f = d.Find("compile_before_first_step");
  ASSERT_NE(f, nullptr) << Listed(d);
  EXPECT_EQ(f->metric(), 2000.0 * kMs);
  EXPECT_EQ(f->threshold(), 1e9);
  EXPECT_TRUE(EvidenceCovers(*f, kT0, kT0 + 2000 * kMs, "host:100/1"));
  EXPECT_EQ(d.Find("recompilation"), nullptr);

  TraceGen short_compile;  // 100 ms: under JAX's 1 s
  short_compile.Host("XlaCompile", "cpu_op", kT0, 100 * kMs);
  short_compile.Steps(kT0 + 200 * kMs, 5);
  EXPECT_EQ(Diagnose(short_compile).Find("compile_before_first_step"), nullptr);
  // ...unless the threshold says so.
  EXPECT_NE(Diagnose(short_compile, {{"compile_before_first_step", 50 * kMs}}).Find("compile_before_first_step"),
            nullptr);
}

TEST(DiagnosisRules, Recompilation) {
  TraceGen gen;
  gen.Steps(kT0, 10);
  const int64_t at = kT0 + 55 * kMs;  // inside step 6
  gen.Host("jit_compile", "cpu_op", at, 3 * kMs);
  gen.Host("BackendCompile", "cpu_op", at + kMs, kMs);  // nested: one compilation
  Diagnosis d = Diagnose(gen);
  const v1::Finding* f = d.Find("recompilation");
  ASSERT_NE(f, nullptr) << Listed(d);
  EXPECT_EQ(f->metric(), 1.0);
  EXPECT_TRUE(EvidenceCovers(*f, at, at + 3 * kMs));

  TraceGen compiled_only;  // running compiled code is not compiling
  compiled_only.Steps(kT0, 10);
  compiled_only.Host("Torch-Compiled Region", "cpu_op", at, 3 * kMs);
  EXPECT_EQ(Diagnose(compiled_only).Find("recompilation"), nullptr);
}

// Five busy steps, a 50 ms pause of the device, five more.
TraceGen WithGap(int64_t* gap_start, int64_t* gap_end) {
  TraceGen gen;
  gen.Steps(kT0, 5);
  *gap_start = kT0 + 50 * kMs;
  *gap_end = *gap_start + 50 * kMs;
  gen.Host("DataLoader.__next__", "cpu_op", *gap_start, 50 * kMs);
  gen.Steps(*gap_end, 5, 6);
  return gen;
}

TEST(DiagnosisRules, DeviceIdle) {
  int64_t gs, ge;
  Diagnosis d = Diagnose(WithGap(&gs, &ge));
  const v1::Finding* f = d.Find("device_idle");
  ASSERT_NE(f, nullptr) << Listed(d);
  EXPECT_DOUBLE_EQ(f->metric(), 50.0 / 150.0);
  ASSERT_GE(f->evidence_size(), 1);
  EXPECT_EQ(f->evidence(0).start_ns(), gs);  // the longest gap first, exactly
  EXPECT_EQ(f->evidence(0).end_ns(), ge);
  EXPECT_EQ(f->evidence(0).track(), "device:0/7");
  // Over the threshold only: at 0.5 a third idle is no finding.
  EXPECT_EQ(Diagnose(WithGap(&gs, &ge), {{"device_idle", 0.5}}).Find("device_idle"), nullptr);
}

TEST(DiagnosisRules, LowDeviceUtilization) {
  int64_t gs, ge;
  Diagnosis d = Diagnose(WithGap(&gs, &ge));
  const v1::Finding* f = d.Find("low_device_utilization");
  ASSERT_NE(f, nullptr) << Listed(d);
  EXPECT_EQ(f->metric(), 0.0);  // a chunk (5 ms) entirely inside the gap
  // The stretches under 50% cover the gap but for the partly busy chunks at its edges.
  const int64_t chunk = 150 * kMs / 30;
  EXPECT_TRUE(EvidenceCovers(*f, gs + chunk, ge - chunk)) << f->DebugString();
}

TEST(DiagnosisRules, TinyKernels) {
  TraceGen gen;
  gen.Steps(kT0, 2);
  // Steps 3-6: 200 kernels of 2 µs, each launched by a 5 µs call.
  const int64_t s = kT0 + 20 * kMs;
  for (int i = 0; i < 200; ++i) gen.Launch(s + i * 10 * kUs, 5 * kUs, s + i * 10 * kUs + 6 * kUs, 2 * kUs);
  Diagnosis d = Diagnose(gen);
  const v1::Finding* f = d.Find("tiny_kernels");
  ASSERT_NE(f, nullptr) << Listed(d);
  EXPECT_DOUBLE_EQ(f->metric(), 200.0 / 220.0);
  EXPECT_TRUE(EvidenceCovers(*f, s + 6 * kUs, s + 199 * 10 * kUs + 8 * kUs, "device:0/7"));

  TraceGen healthy;
  healthy.Steps(kT0, 10);
  EXPECT_EQ(Diagnose(healthy).Find("tiny_kernels"), nullptr);
}

TEST(DiagnosisRules, HostDeviceSync) {
  TraceGen gen;
  gen.Steps(kT0, 10);
  for (int i = 0; i < 10; ++i) {  // loss.item() at the end of each step: one sync per step
    const int64_t at = kT0 + i * 10 * kMs + 9 * kMs + 500 * kUs;
    gen.Host("aten::item", "cpu_op", at, 300 * kUs);
    gen.Host("aten::_local_scalar_dense", "cpu_op", at + 10 * kUs, 280 * kUs);
    gen.Host("cudaStreamSynchronize", "cuda_runtime", at + 20 * kUs, 250 * kUs);
  }
  Diagnosis d = Diagnose(gen);
  const v1::Finding* f = d.Find("host_device_sync");
  ASSERT_NE(f, nullptr) << Listed(d);
  EXPECT_DOUBLE_EQ(f->metric(), 1.0);  // nested calls count once
  const int64_t last = kT0 + 99 * kMs + 500 * kUs;
  EXPECT_TRUE(EvidenceCovers(*f, last, last + 300 * kUs, "host:100/1"));

  TraceGen outside;  // a sync after the last step is not in the loop
  outside.Steps(kT0, 10);
  outside.Host("cudaDeviceSynchronize", "cuda_runtime", kT0 + 101 * kMs, kMs);
  EXPECT_EQ(Diagnose(outside).Find("host_device_sync"), nullptr);
}

TEST(DiagnosisRules, MemcpyBetweenSteps) {
  TraceGen gen;
  gen.Steps(kT0, 10);
  for (int i = 0; i < 10; ++i) {
    gen.Device("Memcpy DtoH (Device -> Pinned)", "gpu_memcpy", kT0 + i * 10 * kMs + 9 * kMs, 20 * kUs, 9);
  }
  Diagnosis d = Diagnose(gen);
  const v1::Finding* f = d.Find("memcpy_between_steps");
  ASSERT_NE(f, nullptr) << Listed(d);
  EXPECT_DOUBLE_EQ(f->metric(), 1.0);
  EXPECT_TRUE(EvidenceCovers(*f, kT0 + 9 * kMs, kT0 + 9 * kMs + 20 * kUs, "device:0/9"));
  EXPECT_EQ(d.Find("pageable_memcpy"), nullptr);

  TraceGen to_device;  // host-to-device input copies are not the pattern
  to_device.Steps(kT0, 10);
  to_device.Device("Memcpy HtoD (Pinned -> Device)", "gpu_memcpy", kT0 + kMs, 20 * kUs, 9);
  EXPECT_EQ(Diagnose(to_device).Find("memcpy_between_steps"), nullptr);
}

TEST(DiagnosisRules, PageableMemcpy) {
  TraceGen gen;
  gen.Steps(kT0, 10);
  const int64_t at = kT0 + 42 * kMs;
  gen.Device("Memcpy HtoD (Pageable -> Device)", "gpu_memcpy", at, 300 * kUs, 9);
  Diagnosis d = Diagnose(gen);
  const v1::Finding* f = d.Find("pageable_memcpy");
  ASSERT_NE(f, nullptr) << Listed(d);
  EXPECT_EQ(f->severity(), "info");
  EXPECT_TRUE(EvidenceCovers(*f, at, at + 300 * kUs, "device:0/9"));

  TraceGen pinned;
  pinned.Steps(kT0, 10);
  pinned.Device("Memcpy HtoD (Pinned -> Device)", "gpu_memcpy", at, 300 * kUs, 9);
  EXPECT_EQ(Diagnose(pinned).Find("pageable_memcpy"), nullptr);
}

TEST(DiagnosisRules, MemoryPressure) {
  TraceGen gen;
  gen.Steps(kT0, 10);
  gen.Memory(kT0 + 10 * kMs, 2 * kGiB);
  const int64_t peak_at = kT0 + 61 * kMs;
  gen.Memory(peak_at, 15 * kGiB + kGiB / 2);  // 96.9% of 16 GiB
  gen.Memory(kT0 + 70 * kMs, 2 * kGiB);
  Diagnosis d = Diagnose(gen);
  const v1::Finding* f = d.Find("memory_pressure");
  ASSERT_NE(f, nullptr) << Listed(d);
  EXPECT_DOUBLE_EQ(f->metric(), 15.5 / 16.0);
  EXPECT_TRUE(EvidenceCovers(*f, peak_at, peak_at + 1, "counter:memory/0"));

  TraceGen low;
  low.Steps(kT0, 10);
  low.Memory(peak_at, 8 * kGiB);
  EXPECT_EQ(Diagnose(low).Find("memory_pressure"), nullptr);
}

TEST(DiagnosisRules, UnoverlappedCommunication) {
  int64_t gs, ge;
  TraceGen gen = WithGap(&gs, &ge);
  // The all-reduce runs in the gap, with no compute beside it.
  gen.Launch(gs, 10 * kUs, gs + 10 * kMs, 20 * kMs, "ncclKernel_AllReduce_RING_LL_Sum_float", 20);
  Diagnosis d = Diagnose(gen);
  const v1::Finding* f = d.Find("unoverlapped_communication");
  ASSERT_NE(f, nullptr) << Listed(d);
  EXPECT_DOUBLE_EQ(f->metric(), 1.0);
  EXPECT_TRUE(EvidenceCovers(*f, gs + 10 * kMs, gs + 30 * kMs, "device:0/20"));

  TraceGen overlapped;  // the same all-reduce while stream 7 computes
  overlapped.Steps(kT0, 10);
  overlapped.Launch(kT0 + 10 * kMs, 10 * kUs, kT0 + 20 * kMs, 20 * kMs, "ncclKernel_AllReduce_RING_LL_Sum_float", 20);
  EXPECT_EQ(Diagnose(overlapped).Find("unoverlapped_communication"), nullptr);
}

v1::JobProfilePoint Rank(const std::string& rank, int64_t median_ms, int64_t ingested) {
  v1::JobProfilePoint p;
  p.set_profile_id("p" + rank + "_" + std::to_string(ingested));
  p.set_node("node" + rank);
  p.set_rank(rank);
  p.set_ingested_at_ns(ingested);
  p.set_start_ns(kT0);
  p.set_end_ns(kT0 + 100 * kMs);
  p.set_steps(10);
  p.set_median_step_ns(median_ms * kMs);
  return p;
}

TEST(DiagnosisRules, StragglerRank) {
  auto thresholds = ResolveThresholds(RuleScope::kJob, {});
  ASSERT_TRUE(thresholds.ok());
  // Rank 2's older profile was slow; its latest is the one judged.
  std::vector<v1::JobProfilePoint> job = {Rank("0", 100, 1), Rank("1", 102, 1), Rank("2", 300, 1),
                                          Rank("2", 101, 2), Rank("3", 150, 2)};
  std::vector<v1::Finding> findings = DiagnoseJob({job}, *thresholds);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].rule(), "straggler_rank");
  EXPECT_DOUBLE_EQ(findings[0].metric(), 150.0 / 101.0);  // against the others: median of 100, 101, 102
  ASSERT_EQ(findings[0].evidence_size(), 1);
  EXPECT_EQ(findings[0].evidence(0).profile_id(), "p3_2");

  job.back() = Rank("3", 110, 2);
  EXPECT_TRUE(DiagnoseJob({job}, *thresholds).empty());
  EXPECT_TRUE(DiagnoseJob({{Rank("0", 100, 1)}}, *thresholds).empty());  // one rank: nothing to compare
}

// Before: the median included the rank itself, so of two ranks the slower one was compared with
// their mean and a rank 35% slower (1.35 / 1.175 = 1.15) never reached 1.2.
TEST(DiagnosisRules, StragglerRankWorksForTwoRanks) {
  auto thresholds = ResolveThresholds(RuleScope::kJob, {});
  ASSERT_TRUE(thresholds.ok());
  std::vector<v1::Finding> findings = DiagnoseJob({{Rank("0", 100, 1), Rank("1", 135, 1)}}, *thresholds);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].rule(), "straggler_rank");
  EXPECT_DOUBLE_EQ(findings[0].metric(), 1.35);
  EXPECT_EQ(findings[0].evidence(0).profile_id(), "p1_1");
  EXPECT_TRUE(DiagnoseJob({{Rank("0", 100, 1), Rank("1", 110, 1)}}, *thresholds).empty()) << "within 10%";
}

TEST(DiagnosisRules, InputStallWhileTheHostLoadsData) {
  TraceGen gen;
  for (int i = 0; i < 10; ++i) {  // each step: 3 ms in the DataLoader, then 7 ms of kernels
    const int64_t s = kT0 + i * 10 * kMs;
    gen.Host(absl::StrCat("ProfilerStep#", i + 1), "user_annotation", s, 10 * kMs);
    gen.Host("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "user_annotation", s, 3 * kMs);
    for (int k = 3; k < 10; ++k) gen.Launch(s + k * kMs, 5 * kUs, s + k * kMs, kMs);
  }
  Diagnosis d = Diagnose(gen);
  const v1::Finding* f = d.Find("input_stall");
  ASSERT_NE(f, nullptr) << Listed(d);
  EXPECT_DOUBLE_EQ(f->metric(), 0.3);  // 3 ms of a 10 ms median step
  EXPECT_EQ(f->evidence_size(), 9);    // the first step's has no activity before it
  EXPECT_TRUE(EvidenceCovers(*f, kT0 + 10 * kMs, kT0 + 13 * kMs));
  EXPECT_EQ(Diagnose(gen, {{"input_stall", 0.5}}).Find("input_stall"), nullptr);
}

TEST(DiagnosisRules, InputStallOnHostToDeviceCopiesOutsideTheSteps) {
  TraceGen gen;
  for (int i = 0; i < 10; ++i) {  // 10 ms steps, 2 ms apart; the next batch is copied in between
    const int64_t s = kT0 + i * 12 * kMs;
    gen.Host(absl::StrCat("ProfilerStep#", i + 1), "user_annotation", s, 10 * kMs);
    for (int k = 0; k < 10; ++k) gen.Launch(s + k * kMs, 5 * kUs, s + k * kMs, kMs);
    gen.Device("Memcpy HtoD (Pageable -> Device)", "gpu_memcpy", s + 10 * kMs + 500 * kUs, kMs, 9);
  }
  Diagnosis d = Diagnose(gen);
  const v1::Finding* f = d.Find("input_stall");
  ASSERT_NE(f, nullptr) << Listed(d);
  EXPECT_DOUBLE_EQ(f->metric(), 0.2);
  EXPECT_TRUE(EvidenceCovers(*f, kT0 + 10 * kMs, kT0 + 12 * kMs));
  TraceGen inside;  // the same copies inside the steps are not this pattern
  inside.Steps(kT0, 10);
  inside.Device("Memcpy HtoD (Pageable -> Device)", "gpu_memcpy", kT0 + kMs, kMs, 9);
  EXPECT_EQ(Diagnose(inside).Find("input_stall"), nullptr);
}

v1::JobCollectivesResponse Collectives(int instances, int64_t late_count) {
  v1::JobCollectivesResponse c;
  c.set_instances(instances);
  for (int r = 0; r < 3; ++r) {
    v1::JobTraceProfile* p = c.add_profiles();
    p->set_profile_id(absl::StrCat("p", r));
    p->set_rank(absl::StrCat(r));
    p->set_clock_offset_ns(r * 1000);
    v1::CollectiveRankTotals* t = c.add_ranks();
    t->set_rank(absl::StrCat(r));
    t->set_profile_id(absl::StrCat("p", r));
    t->set_instances(instances);
    t->set_last_count(r == 1 ? late_count : 0);
  }
  for (int i = 0; i < instances; ++i) {
    v1::CollectiveInstance* inst = c.add_collectives();
    inst->set_op("all_reduce");
    inst->set_seq(i);
    if (i < late_count) inst->set_last_rank("1");
    for (int r = 0; r < 3; ++r) {
      v1::CollectiveRankTiming* t = inst->add_ranks();
      t->set_profile_id(absl::StrCat("p", r));
      t->set_rank(absl::StrCat(r));
      t->set_start_ns(i * kMs + (r == 1 ? 500 * kUs : 0));
      t->set_end_ns(i * kMs + 900 * kUs);
      t->set_wait_ns(r == 1 ? 0 : 500 * kUs);
    }
  }
  return c;
}

TEST(DiagnosisRules, LateRank) {
  auto thresholds = ResolveThresholds(RuleScope::kJob, {});
  ASSERT_TRUE(thresholds.ok());
  const v1::JobCollectivesResponse late = Collectives(8, 6);
  std::vector<v1::Finding> findings = DiagnoseJob({{}, &late}, *thresholds);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].rule(), "late_rank");
  EXPECT_DOUBLE_EQ(findings[0].metric(), 0.75);
  ASSERT_EQ(findings[0].evidence_size(), 6);
  EXPECT_EQ(findings[0].evidence(0).profile_id(), "p1");
  EXPECT_EQ(findings[0].evidence(0).start_ns(), 500 * kUs - 1000);  // rank 1's own clock
  const v1::JobCollectivesResponse seldom = Collectives(8, 3);
  EXPECT_TRUE(DiagnoseJob({{}, &seldom}, *thresholds).empty()) << "3 of 8 is under one half";
  const v1::JobCollectivesResponse few = Collectives(4, 4);
  EXPECT_TRUE(DiagnoseJob({{}, &few}, *thresholds).empty()) << "fewer than 5 instances";
}

// A profile stored before the event store: the summary rules still judge it.
TEST(DiagnosisRules, SummaryOnlyProfilesRunTheSummaryRules) {
  v1::ProfileSummary summary;
  v1::DeviceBreakdown* d = summary.add_devices();
  d->set_device("0");
  d->set_span_ns(100);
  d->set_busy_ns(10);
  d->set_idle_ns(90);
  auto thresholds = ResolveThresholds(RuleScope::kProfile, {});
  ASSERT_TRUE(thresholds.ok());
  std::vector<v1::Finding> findings = DiagnoseProfile(SummaryOnlyFacts("old", summary), *thresholds);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].rule(), "device_idle");
  EXPECT_DOUBLE_EQ(findings[0].metric(), 0.9);
}

TEST(DiagnosisRules, ThresholdsAreCheckedByNameScopeAndRange) {
  google::protobuf::Map<std::string, double> t;
  t["device_idle"] = 1.5;
  EXPECT_NE(ResolveThresholds(RuleScope::kProfile, t).status().message().find("between 0 and 1"), std::string::npos);
  t.clear();
  t["device_idel"] = 0.5;
  EXPECT_NE(ResolveThresholds(RuleScope::kProfile, t).status().message().find("no rule 'device_idel'"),
            std::string::npos);
  t.clear();
  t["straggler_rank"] = 1.5;
  EXPECT_NE(ResolveThresholds(RuleScope::kProfile, t).status().message().find("job rule"), std::string::npos);
  EXPECT_TRUE(ResolveThresholds(RuleScope::kJob, t).ok());
  t.clear();
  t["tiny_kernels"] = std::nan("");
  EXPECT_FALSE(ResolveThresholds(RuleScope::kProfile, t).ok());
  // Every rule is defined, with a source and a default inside its own range.
  for (const Rule& r : Rules()) {
    EXPECT_GT(std::string(r.definition).size(), 40u) << r.name;
    EXPECT_FALSE(std::string(r.source).empty()) << r.name;
    EXPECT_TRUE(r.threshold >= r.min && r.threshold <= r.max) << r.name;
  }
}

}  // namespace
}  // namespace fleetprof::diagnosis

namespace fleetprof::diagnosis {
namespace {

// The server's regression records of a profile (server/ingest/regression_detector.h) become
// findings, with the baseline's profiles as evidence; an override raises the bar.
TEST(DiagnosisRules, RegressionRecordsBecomeFindingsWithTheirBaseline) {
  ProfileFacts facts = SummaryOnlyFacts("p7", v1::ProfileSummary());
  v1::Regression r;
  r.set_profile_id("p7");
  r.set_what("kernel");
  r.set_name("gemm_kernel");
  r.set_baseline_ns(100'000'000);
  r.set_now_ns(130'000'000);
  r.set_change(0.3);
  for (const char* id : {"p1", "p2", "p3", "p4", "p5", "p6"}) r.add_baseline_profiles(id);
  facts.regressions.push_back(r);
  auto defaults = ResolveThresholds(RuleScope::kProfile, {});
  ASSERT_TRUE(defaults.ok());
  std::vector<v1::Finding> found;
  for (v1::Finding& f : DiagnoseProfile(facts, *defaults)) {
    if (f.rule() == "regression") found.push_back(std::move(f));
  }
  ASSERT_EQ(found.size(), 1u);
  EXPECT_DOUBLE_EQ(found[0].metric(), 0.3);
  EXPECT_DOUBLE_EQ(found[0].threshold(), 0.05);
  EXPECT_NE(found[0].summary().find("kernel gemm_kernel"), std::string::npos) << found[0].summary();
  ASSERT_EQ(found[0].evidence_size(), 6);
  EXPECT_EQ(found[0].evidence(0).profile_id(), "p1");
  EXPECT_EQ(found[0].evidence(0).track(), "profile:p1");

  google::protobuf::Map<std::string, double> higher;
  higher["regression"] = 0.5;
  auto raised = ResolveThresholds(RuleScope::kProfile, higher);
  ASSERT_TRUE(raised.ok());
  for (const v1::Finding& f : DiagnoseProfile(facts, *raised)) EXPECT_NE(f.rule(), "regression");
}

}  // namespace
}  // namespace fleetprof::diagnosis
