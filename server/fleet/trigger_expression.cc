#include "server/fleet/trigger_expression.h"

#include <cmath>
#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace fleetprof {
namespace {

constexpr size_t kMaxWhenBytes = 256;

absl::Status Refuse(absl::string_view when, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("trigger condition '", when, "': ", why, "; the grammar is ", kTriggerGrammar));
}

// Splits on spaces, with <, > and % as tokens of their own ("<30%" reads as "<", "30", "%").
std::vector<std::string> Tokens(absl::string_view when) {
  std::string spaced;
  for (char c : when) {
    if (c == '<' || c == '>' || c == '%') {
      absl::StrAppend(&spaced, " ", std::string(1, c), " ");
    } else {
      spaced.push_back(absl::ascii_isspace(static_cast<unsigned char>(c)) ? ' ' : c);
    }
  }
  return absl::StrSplit(spaced, ' ', absl::SkipEmpty());
}

absl::StatusOr<TriggerCondition> ParseDevice(absl::string_view when, const std::vector<std::string>& t) {
  TriggerCondition out;
  v1::DeviceCondition& device = out.device;
  device.set_metric(t[0] == "device_utilization" ? v1::DeviceCondition::DEVICE_UTILIZATION
                                                 : v1::DeviceCondition::DEVICE_MEMORY);
  // metric op N [%] for D
  size_t i = 1;
  if (i >= t.size() || (t[i] != "<" && t[i] != ">"))
    return Refuse(when, "a device condition needs < or > after its metric");
  device.set_below(t[i] == "<");
  ++i;
  double percent = 0;
  if (i >= t.size() || !absl::SimpleAtod(t[i], &percent) || !std::isfinite(percent)) {
    return Refuse(when, "the bound must be a percentage such as 30%");
  }
  if (percent < 0 || percent > 100) return Refuse(when, absl::StrCat("the bound ", t[i], "% lies outside 0..100"));
  device.set_percent(percent);
  ++i;
  if (i < t.size() && t[i] == "%") ++i;
  if (i >= t.size() || t[i] != "for")
    return Refuse(when, "a device condition needs `for D`, how long the value stays past the bound");
  ++i;
  if (i + 1 != t.size()) return Refuse(when, "`for` takes one duration and nothing follows it");
  absl::StatusOr<int64_t> for_ms = ParseTriggerDurationMs(t[i]);
  if (!for_ms.ok()) return Refuse(when, for_ms.status().message());
  if (*for_ms > kMaxTriggerWindowMs) return Refuse(when, "the window may be at most 24h");
  device.set_for_ms(*for_ms);
  return out;
}

}  // namespace

absl::StatusOr<int64_t> ParseTriggerDurationMs(absl::string_view text) {
  const absl::string_view s = absl::StripAsciiWhitespace(text);
  size_t unit = 0;
  while (unit < s.size() && (absl::ascii_isdigit(static_cast<unsigned char>(s[unit])) || s[unit] == '.')) ++unit;
  const absl::string_view number = s.substr(0, unit);
  const absl::string_view suffix = s.substr(unit);
  double value = 0;
  double unit_ms = 0;
  if (suffix == "ms") unit_ms = 1;
  if (suffix == "s") unit_ms = 1000;
  if (suffix == "m") unit_ms = 60'000;
  if (suffix == "h") unit_ms = 3'600'000;
  if (suffix == "d") unit_ms = 86'400'000;
  if (number.empty() || unit_ms == 0 || !absl::SimpleAtod(number, &value) || !std::isfinite(value)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", s, "' is not a duration (a number and one of ms, s, m, h, d: 500ms, 5s, 2m, 1h)"));
  }
  const double ms = value * unit_ms;
  if (ms < 1 || ms > 1e15)
    return absl::InvalidArgumentError(absl::StrCat("duration '", s, "' must lie between 1ms and a few years"));
  return static_cast<int64_t>(std::llround(ms));
}

absl::StatusOr<TriggerCondition> ParseTriggerCondition(absl::string_view when,
                                                       const std::vector<std::string>& known_rules) {
  if (when.size() > kMaxWhenBytes) return Refuse(when.substr(0, 40), "longer than 256 bytes");
  for (char c : when) {
    if (static_cast<unsigned char>(c) < 0x20 && c != '\t') return Refuse("", "control characters are not allowed");
  }
  const std::vector<std::string> t = Tokens(when);
  if (t.empty()) return Refuse(when, "empty");
  if (t[0] == "device_utilization" || t[0] == "device_memory") return ParseDevice(when, t);
  if (t[0] == "regression") {
    if (t.size() != 1) return Refuse(when, "`regression` takes nothing after it");
    TriggerCondition out;
    out.regression = true;
    return out;
  }
  if (t[0] == "rule") {
    if (t.size() != 2) return Refuse(when, "`rule` takes one rule name");
    for (const std::string& known : known_rules) {
      if (known == t[1]) {
        TriggerCondition out;
        out.rule = t[1];
        return out;
      }
    }
    return absl::InvalidArgumentError(absl::StrCat("trigger condition '", when, "': unknown rule '", t[1],
                                                   "'; the rules are ", absl::StrJoin(known_rules, ", ")));
  }
  return Refuse(when, absl::StrCat("'", t[0], "' is not a condition"));
}

std::string TriggerKind(const v1::Trigger& trigger) {
  if (trigger.regression()) return "regression";
  if (!trigger.rule().empty()) return "rule";
  return trigger.device().metric() == v1::DeviceCondition::DEVICE_MEMORY ? "device_memory" : "device_utilization";
}

}  // namespace fleetprof
