#pragma once
// The named diagnosis rules (`fleetprof diagnose`). Each rule has one threshold, a default
// taken from a tool users know where one exists, a direction, and a precise definition; the
// table in rules.cc is the one place they are written down, and the API returns it with
// every answer (rules[]), so a user sees what was measured and against what.

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "diagnosis/profile_facts.h"
#include "fleetprof/v1/compare.pb.h"
#include "fleetprof/v1/query.pb.h"

namespace fleetprof::diagnosis {

enum class RuleScope { kProfile, kJob };

struct Rule {
  const char* name;
  RuleScope scope;
  double threshold;  // default
  double min;        // accepted overrides: [min, max]
  double max;
  bool below;        // the finding holds when metric < threshold (else metric >= threshold)
  const char* unit;
  const char* definition;
  const char* source;
};

const std::vector<Rule>& Rules();

// The thresholds to use: every rule of `scope` at its default, replaced by `overrides`.
// INVALID_ARGUMENT for an unknown rule, a rule of the other scope, or a value outside its
// range (naming the range).
absl::StatusOr<std::map<std::string, double>> ResolveThresholds(
    RuleScope scope, const google::protobuf::Map<std::string, double>& overrides);

// Runs every profile rule. Findings: warnings first, then by rule name.
std::vector<v1::Finding> DiagnoseProfile(const ProfileFacts& facts, const std::map<std::string, double>& thresholds);

// What the job rules read: the job's profiles as points (compare/job_views.h) and, when the
// job has a capture (or ranks) whose collectives could be matched, that analysis.
struct JobFacts {
  std::vector<v1::JobProfilePoint> points;
  const v1::JobCollectivesResponse* collectives = nullptr;
};

// Runs the job rules over the job's facts.
std::vector<v1::Finding> DiagnoseJob(const JobFacts& facts, const std::map<std::string, double>& thresholds);

// rules[] of an answer: each rule of `scope` with the threshold it ran with.
void DescribeRules(RuleScope scope, const std::map<std::string, double>& thresholds, v1::DiagnoseResponse* out);

}  // namespace fleetprof::diagnosis
