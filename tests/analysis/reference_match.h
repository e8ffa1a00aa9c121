#pragma once
// Compares an analysis with a reference result of the shared corpus field by field
// (docs/analysis.md, Reference results): devices by `device`, kernels and ops by `name`; every
// reference entry must exist with equal values, and no extra entry may appear.

#include <string>

namespace fleetprof::analysis::testing {

// Analyses the corpus file `trace` (a path under corpus/) and compares its devices, kernels
// and ops with corpus/reference/`reference`; skips (fails under CI=true) when either is missing.
// Expects no skipped events.
void ExpectMatchesReference(const std::string& trace, const std::string& reference);

}  // namespace fleetprof::analysis::testing
