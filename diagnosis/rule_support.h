#pragma once
// What the rule implementations share (diagnosis/ internal): interval arithmetic on ns,
// step windows, and building findings.

#include <cstdint>
#include <string>
#include <vector>

#include "diagnosis/profile_facts.h"
#include "diagnosis/rules.h"
#include "fleetprof/v1/compare.pb.h"

namespace fleetprof::diagnosis {

struct Interval {
  int64_t start = 0;
  int64_t end = 0;
  uint32_t track = 0;  // of the last event merged into it
  uint32_t name = 0;   // of the event, where one event makes the interval
};

// Merges overlapping or touching intervals; the input need not be sorted.
std::vector<Interval> Union(std::vector<Interval> intervals);
int64_t TotalLength(const std::vector<Interval>& merged);
// The parts of `a` that `b` does not cover (both merged).
std::vector<Interval> Subtract(const std::vector<Interval>& a, const std::vector<Interval>& b);

// [start, end) of each step of the summary, in order.
std::vector<Interval> StepWindows(const ProfileFacts& facts);
// True when `t` falls inside one of the (sorted, disjoint) windows.
bool InsideAny(const std::vector<Interval>& windows, int64_t t);

// "12.3 ms", "850 µs", "2.10 s": for summaries, never for values.
std::string HumanNs(int64_t ns);
std::string Percent(double share);

v1::Finding NewFinding(const Rule& rule, double metric, double threshold, std::string summary,
                       std::string suggestion);
void AddEvidence(v1::Finding* finding, const std::string& track, int64_t start_ns, int64_t end_ns,
                 std::string note = "");

// The rule implementations, in the order of the table (rules.cc).
using ProfileRuleFn = void (*)(const ProfileFacts&, const Rule&, double, std::vector<v1::Finding>*);
using JobRuleFn = void (*)(const JobFacts&, const Rule&, double, std::vector<v1::Finding>*);

void CompileBeforeFirstStep(const ProfileFacts&, const Rule&, double, std::vector<v1::Finding>*);
void Recompilation(const ProfileFacts&, const Rule&, double, std::vector<v1::Finding>*);
void DeviceIdle(const ProfileFacts&, const Rule&, double, std::vector<v1::Finding>*);
void LowDeviceUtilization(const ProfileFacts&, const Rule&, double, std::vector<v1::Finding>*);
void TinyKernels(const ProfileFacts&, const Rule&, double, std::vector<v1::Finding>*);
void HostDeviceSync(const ProfileFacts&, const Rule&, double, std::vector<v1::Finding>*);
void MemcpyBetweenSteps(const ProfileFacts&, const Rule&, double, std::vector<v1::Finding>*);
void PageableMemcpy(const ProfileFacts&, const Rule&, double, std::vector<v1::Finding>*);
void MemoryPressure(const ProfileFacts&, const Rule&, double, std::vector<v1::Finding>*);
void UnoverlappedCommunication(const ProfileFacts&, const Rule&, double, std::vector<v1::Finding>*);
void InputStall(const ProfileFacts&, const Rule&, double, std::vector<v1::Finding>*);
void Regression(const ProfileFacts&, const Rule&, double, std::vector<v1::Finding>*);
void StragglerRank(const JobFacts&, const Rule&, double, std::vector<v1::Finding>*);
void LateRank(const JobFacts&, const Rule&, double, std::vector<v1::Finding>*);

}  // namespace fleetprof::diagnosis
