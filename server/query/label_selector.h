#pragma once
// Pyroscope's label selectors, which are Prometheus's: `{service_name="train", node!="n1",
// rank=~"0|1", profile_id!~"old.*"}` (values in double quotes, single quotes or backticks; a
// trailing comma; `{}` or nothing selects everything). A regex is RE2 syntax and matches the
// whole value; a label a profile lacks has the value "", as in Prometheus.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "re2/re2.h"

namespace fleetprof {

struct LabelMatcher {
  enum class Op { kEqual, kNotEqual, kRegex, kNotRegex };
  std::string name;
  Op op = Op::kEqual;
  std::string value;
  std::shared_ptr<const RE2> regex;  // kRegex, kNotRegex

  bool Matches(std::string_view label_value) const;
};

// A profile's labels by name, sorted by name (server/query/pyroscope_labels.h).
using LabelSet = std::vector<std::pair<std::string, std::string>>;

class LabelSelector {
 public:
  // INVALID_ARGUMENT saying where and what is wrong: a missing brace or quote, an unknown
  // operator, a name that is not [a-zA-Z_][a-zA-Z0-9_]*, a regex RE2 refuses.
  static absl::StatusOr<LabelSelector> Parse(std::string_view text);

  bool Matches(const LabelSet& labels) const;
  const std::vector<LabelMatcher>& matchers() const { return matchers_; }
  // The value an `=` matcher requires of `name`, or null (to narrow a listing to one job).
  const std::string* RequiredValue(std::string_view name) const;

 private:
  std::vector<LabelMatcher> matchers_;
};

// Every selector parsed; an empty list selects everything, several select a profile any of
// them selects (Pyroscope's `matchers` lists).
absl::StatusOr<std::vector<LabelSelector>> ParseLabelSelectors(const std::vector<std::string>& texts);

// [a-zA-Z_][a-zA-Z0-9_]*
bool IsLabelName(std::string_view name);

}  // namespace fleetprof
