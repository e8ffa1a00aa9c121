#include "storage/membership.h"

#include <algorithm>
#include <cstdlib>

namespace fleetprof {

int64_t MedianClockOffset(std::vector<int64_t> offsets) {
  if (offsets.empty()) return 0;
  std::sort(offsets.begin(), offsets.end());
  const size_t n = offsets.size();
  int64_t median = offsets[n / 2];
  if (n % 2 == 0 && std::llabs(offsets[n / 2 - 1]) < std::llabs(median)) median = offsets[n / 2 - 1];
  return std::llabs(median) <= Membership::kTrustedClockSkewNs ? 0 : median;
}

}  // namespace fleetprof
