#include "diagnosis/rule_support.h"

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_format.h"

namespace fleetprof::diagnosis {

std::vector<Interval> Union(std::vector<Interval> intervals) {
  std::sort(intervals.begin(), intervals.end(),
            [](const Interval& a, const Interval& b) { return a.start < b.start; });
  std::vector<Interval> merged;
  for (const Interval& i : intervals) {
    if (!merged.empty() && i.start <= merged.back().end) {
      if (i.end > merged.back().end) {
        merged.back().end = i.end;
        merged.back().track = i.track;
      }
      continue;
    }
    merged.push_back(i);
  }
  return merged;
}

int64_t TotalLength(const std::vector<Interval>& merged) {
  int64_t total = 0;
  for (const Interval& i : merged) total += i.end - i.start;
  return total;
}

std::vector<Interval> Subtract(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::vector<Interval> out;
  size_t j = 0;
  for (const Interval& i : a) {
    int64_t cursor = i.start;
    while (j < b.size() && b[j].end <= cursor) ++j;
    for (size_t k = j; k < b.size() && b[k].start < i.end; ++k) {
      if (b[k].start > cursor) out.push_back(Interval{cursor, b[k].start, i.track});
      cursor = std::max(cursor, b[k].end);
      if (cursor >= i.end) break;
    }
    if (cursor < i.end) out.push_back(Interval{cursor, i.end, i.track});
  }
  return out;
}

std::vector<Interval> StepWindows(const ProfileFacts& facts) {
  std::vector<Interval> steps;
  for (const v1::StepStat& s : facts.summary.steps()) steps.push_back(Interval{s.start_ns(), s.end_ns()});
  std::sort(steps.begin(), steps.end(), [](const Interval& a, const Interval& b) { return a.start < b.start; });
  return steps;
}

bool InsideAny(const std::vector<Interval>& windows, int64_t t) {
  auto it = std::upper_bound(windows.begin(), windows.end(), t,
                             [](int64_t v, const Interval& w) { return v < w.start; });
  if (it == windows.begin()) return false;
  --it;
  return t >= it->start && t < it->end;
}

std::string HumanNs(int64_t ns) {
  const double v = static_cast<double>(ns);
  if (ns >= 1'000'000'000 || ns <= -1'000'000'000) return absl::StrFormat("%.2f s", v / 1e9);
  if (ns >= 1'000'000 || ns <= -1'000'000) return absl::StrFormat("%.1f ms", v / 1e6);
  if (ns >= 1'000 || ns <= -1'000) return absl::StrFormat("%.1f µs", v / 1e3);
  return absl::StrFormat("%d ns", ns);
}

std::string Percent(double share) { return absl::StrFormat("%.1f%%", share * 100.0); }

v1::Finding NewFinding(const Rule& rule, double metric, double threshold, std::string summary,
                       std::string suggestion) {
  v1::Finding f;
  f.set_rule(rule.name);
  f.set_severity("warning");
  f.set_summary(std::move(summary));
  f.set_metric(metric);
  f.set_threshold(threshold);
  f.set_suggestion(std::move(suggestion));
  return f;
}

void AddEvidence(v1::Finding* finding, const std::string& track, int64_t start_ns, int64_t end_ns,
                 std::string note) {
  v1::Evidence* e = finding->add_evidence();
  e->set_track(track);
  e->set_start_ns(start_ns);
  e->set_end_ns(end_ns);
  e->set_note(std::move(note));
}

}  // namespace fleetprof::diagnosis
