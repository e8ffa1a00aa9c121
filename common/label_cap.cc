#include "common/label_cap.h"

#include <algorithm>
#include <vector>

namespace fleetprof {

std::set<std::string> KeptLabelValues(const std::map<std::string, double>& totals, size_t max) {
  std::set<std::string> kept;
  if (totals.size() <= max) {
    for (const auto& [value, total] : totals) kept.insert(value);
    return kept;
  }
  std::vector<std::pair<double, std::string>> by_size;
  by_size.reserve(totals.size());
  for (const auto& [value, total] : totals) by_size.emplace_back(-total, value);
  const size_t keep = max > 0 ? max - 1 : 0;
  std::partial_sort(by_size.begin(), by_size.begin() + static_cast<std::ptrdiff_t>(keep), by_size.end());
  for (size_t i = 0; i < keep; ++i) kept.insert(by_size[i].second);
  return kept;
}

}  // namespace fleetprof
