#pragma once
// Field-by-field comparison of an analysis JSON with a corpus reference, as docs/analysis.md
// (Reference results) prescribes: entries matched by `device` or `name`, every reference
// entry present with equal values, no extra entries, order and extra top-level keys ignored.

#include <string>

namespace fleetprof::testing {

// Compares the sections ("devices", "kernels", "ops") that `reference_json` has. Returns ""
// when equal, else a description of the first differences.
std::string CompareWithReference(const std::string& actual_json, const std::string& reference_json);

// Compares one section of two analysis JSON texts the same way (both must have it).
std::string CompareSection(const std::string& actual_json, const std::string& expected_json,
                           const std::string& section);

}  // namespace fleetprof::testing
