#include "tests/analysis/reference_match.h"

#include <map>
#include <string>

#include "analysis/trace_analyzer.h"
#include "gtest/gtest.h"
#include "simdjson.h"
#include "tests/analysis/summary_json_for_test.h"
#include "tests/test_support.h"

namespace fleetprof::analysis::testing {
namespace {

using ::fleetprof::testing::CorpusPath;

std::string ElementText(simdjson::dom::element value) {
  if (value.is_string()) return "\"" + std::string(std::string_view(value.get_string())) + "\"";
  if (value.is_int64()) return std::to_string(int64_t(value.get_int64()));
  return simdjson::to_string(value);
}

// Compares `section` entries keyed by `key`: every reference entry must exist with equal
// values for all of its fields, and no extra entry may appear.
void ExpectSectionMatches(simdjson::dom::element reference, simdjson::dom::element actual,
                          const char* section, const char* key) {
  simdjson::dom::array ref_entries;
  if (reference[section].get(ref_entries) != simdjson::SUCCESS) return;  // not in the reference
  simdjson::dom::array got_entries;
  ASSERT_EQ(actual[section].get(got_entries), simdjson::SUCCESS) << "no " << section;
  std::map<std::string, simdjson::dom::object> got;
  for (simdjson::dom::element entry : got_entries) {
    std::string name(std::string_view(entry[key].get_string()));
    EXPECT_TRUE(got.emplace(name, entry.get_object()).second) << section << ": duplicate " << name;
  }
  size_t matched = 0;
  for (simdjson::dom::element entry : ref_entries) {
    std::string name(std::string_view(entry[key].get_string()));
    auto it = got.find(name);
    if (it == got.end()) {
      ADD_FAILURE() << section << ": missing entry " << name;
      continue;
    }
    ++matched;
    for (auto [field, value] : entry.get_object()) {
      simdjson::dom::element ours;
      if (it->second[field].get(ours) != simdjson::SUCCESS) {
        ADD_FAILURE() << section << " " << name << ": missing field " << field;
        continue;
      }
      EXPECT_EQ(ElementText(ours), ElementText(value)) << section << " " << name << " ." << field;
    }
  }
  EXPECT_EQ(matched, got.size()) << section << ": entries the reference does not have";
}

}  // namespace

void ExpectMatchesReference(const std::string& trace, const std::string& reference) {
  const std::string trace_path = CorpusPath(trace);
  const std::string reference_path = CorpusPath("reference/" + reference);
  FLEETPROF_REQUIRE_PATH(trace_path);
  FLEETPROF_REQUIRE_PATH(reference_path);
  absl::StatusOr<TraceSummary> summary = AnalyzeTraceFile(trace_path);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->skipped_events, 0);

  simdjson::dom::parser ref_parser;
  simdjson::dom::parser got_parser;
  simdjson::padded_string ref_text(fleetprof::testing::ReadSmallFile(reference_path));
  simdjson::padded_string got_text(SummaryToJson(*summary));
  simdjson::dom::element ref_doc;
  simdjson::dom::element got_doc;
  ASSERT_EQ(ref_parser.parse(ref_text).get(ref_doc), simdjson::SUCCESS);
  ASSERT_EQ(got_parser.parse(got_text).get(got_doc), simdjson::SUCCESS)
      << "our JSON does not parse";
  ExpectSectionMatches(ref_doc, got_doc, "devices", "device");
  ExpectSectionMatches(ref_doc, got_doc, "kernels", "name");
  ExpectSectionMatches(ref_doc, got_doc, "ops", "name");
}

}  // namespace fleetprof::analysis::testing
