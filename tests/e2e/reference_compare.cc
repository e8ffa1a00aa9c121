#include "tests/e2e/reference_compare.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "simdjson.h"

namespace fleetprof::testing {
namespace {

using Row = std::map<std::string, std::string>;  // field -> canonical value text

// section -> key -> row; values rendered as text so ints compare exactly.
std::map<std::string, Row> Rows(simdjson::dom::element doc, const std::string& section,
                                std::string* error) {
  std::map<std::string, Row> rows;
  simdjson::dom::array array;
  if (doc[section].get(array) != simdjson::SUCCESS) {
    *error = absl::StrCat("no '", section, "' array");
    return rows;
  }
  const char* key_field = section == "devices" ? "device" : "name";
  for (simdjson::dom::element entry : array) {
    simdjson::dom::object object;
    if (entry.get(object) != simdjson::SUCCESS) continue;
    Row row;
    for (auto field : object) {
      std::string text = simdjson::minify(field.value);
      row[std::string(field.key)] = text;
    }
    std::string key = row[key_field];
    if (rows.count(key) > 0) *error = absl::StrCat("duplicate entry ", key, " in ", section);
    rows[key] = std::move(row);
  }
  return rows;
}

std::string CompareParsed(simdjson::dom::element actual, simdjson::dom::element expected,
                          const std::string& section) {
  std::string error;
  auto want = Rows(expected, section, &error);
  if (!error.empty()) return absl::StrCat("reference: ", error);
  auto got = Rows(actual, section, &error);
  if (!error.empty()) return absl::StrCat("actual: ", error);
  std::string diff;
  int shown = 0;
  auto note = [&](const std::string& line) {
    if (shown++ < 10) absl::StrAppend(&diff, line, "\n");
  };
  for (const auto& [key, row] : want) {
    auto it = got.find(key);
    if (it == got.end()) {
      note(absl::StrCat(section, ": missing ", key));
      continue;
    }
    for (const auto& [field, value] : row) {
      auto f = it->second.find(field);
      if (f == it->second.end() || f->second != value) {
        note(absl::StrCat(section, " ", key, ".", field, ": expected ", value, ", got ",
                          f == it->second.end() ? "(absent)" : f->second));
      }
    }
  }
  for (const auto& [key, row] : got) {
    if (want.count(key) == 0) note(absl::StrCat(section, ": unexpected entry ", key));
  }
  if (shown > 10) absl::StrAppend(&diff, "... ", shown - 10, " more differences\n");
  return diff;
}

}  // namespace

std::string CompareSection(const std::string& actual_json, const std::string& expected_json,
                           const std::string& section) {
  simdjson::dom::parser p1, p2;
  simdjson::dom::element actual, expected;
  if (p1.parse(actual_json).get(actual) != simdjson::SUCCESS) return "actual is not JSON";
  if (p2.parse(expected_json).get(expected) != simdjson::SUCCESS) return "expected is not JSON";
  return CompareParsed(actual, expected, section);
}

std::string CompareWithReference(const std::string& actual_json, const std::string& reference_json) {
  simdjson::dom::parser p1, p2;
  simdjson::dom::element actual, expected;
  if (p1.parse(actual_json).get(actual) != simdjson::SUCCESS) return "actual is not JSON";
  if (p2.parse(reference_json).get(expected) != simdjson::SUCCESS) return "reference is not JSON";
  std::string diff;
  for (const char* section : {"devices", "kernels", "ops"}) {
    simdjson::dom::array unused;
    if (expected[section].get(unused) != simdjson::SUCCESS) continue;
    absl::StrAppend(&diff, CompareParsed(actual, expected, section));
  }
  return diff;
}

}  // namespace fleetprof::testing
