#pragma once
// Prometheus labels whose values come from outside (job names: a process's FLEETPROF_JOB, an
// upload's job) are capped, so a flood of distinct names cannot grow the scrape and the TSDB
// without bound: the values with the largest numbers keep their own series and the rest add
// up under job="other". Never use a pid or any per-process id as a label.

#include <cstddef>
#include <map>
#include <set>
#include <string>

namespace fleetprof {

inline constexpr char kOtherLabelValue[] = "other";

// Of `totals` (label value -> its size, e.g. bytes), the values that keep a series of their
// own: all of them when there are at most `max`, else the max - 1 largest (ties by name), the
// last place being "other".
std::set<std::string> KeptLabelValues(const std::map<std::string, double>& totals, size_t max);

// `value` itself when kept, else "other".
inline std::string CappedLabelValue(const std::set<std::string>& kept, const std::string& value) {
  return kept.contains(value) ? value : kOtherLabelValue;
}

}  // namespace fleetprof
