#pragma once
// Compares `fleetprof stats --json` output ({"reports":{…},"nvtx_open_ranges":N}, DESIGN.md) with
// the `stats` of a corpus reference: the same reports, rows in the same order, names and integers
// equal, fractional values within 1e-6 relative.

#include <string>
#include <string_view>

namespace fleetprof::analysis::testing {

// `reference`: a file under corpus/reference/. Skips (fails under CI=true) when it is missing.
void ExpectStatsEqualReference(std::string_view stats_json, const std::string& reference);

}  // namespace fleetprof::analysis::testing
