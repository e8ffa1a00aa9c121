#include "tests/analysis/stats_reference.h"

#include <cmath>
#include <filesystem>

#include "gtest/gtest.h"
#include "simdjson.h"
#include "tests/test_support.h"

namespace fleetprof::analysis::testing {
namespace {

using simdjson::dom::element;

void ExpectSameValue(element got, element want, const std::string& where) {
  if (want.is_string()) {
    ASSERT_TRUE(got.is_string()) << where;
    EXPECT_EQ(std::string_view(got.get_string().value()), std::string_view(want.get_string().value())) << where;
  } else if (want.is_int64() && got.is_int64()) {
    EXPECT_EQ(int64_t(got.get_int64().value()), int64_t(want.get_int64().value())) << where;
  } else {
    ASSERT_TRUE(got.is_number()) << where;
    const double g = got.get_double().value(), w = want.get_double().value();
    EXPECT_LE(std::abs(g - w), 1e-6 * std::max(1.0, std::abs(w))) << where << ": " << g << " vs " << w;
  }
}

}  // namespace

void ExpectStatsEqualReference(std::string_view stats_json, const std::string& reference) {
  const std::string path = fleetprof::testing::CorpusPath("reference/" + reference);
  FLEETPROF_REQUIRE(std::filesystem::exists(path), path);
  simdjson::dom::parser want_parser, got_parser;
  element want, got;
  simdjson::padded_string want_text(fleetprof::testing::ReadSmallFile(path));
  ASSERT_EQ(want_parser.parse(want_text).get(want), simdjson::SUCCESS) << path;
  simdjson::padded_string got_text(stats_json);
  ASSERT_EQ(got_parser.parse(got_text).get(got), simdjson::SUCCESS) << stats_json.substr(0, 200);
  element want_stats = want["stats"].value();
  element reports = got["reports"].value();
  EXPECT_EQ(int64_t(got["nvtx_open_ranges"].get_int64().value()),
            int64_t(want_stats["nvtx_open_ranges"].get_int64().value()));
  for (const char* report : {"cuda_gpu_kern_sum", "cuda_gpu_mem_time_sum", "cuda_gpu_mem_size_sum", "cuda_api_sum",
                             "nvtx_sum"}) {
    simdjson::dom::array want_rows = want_stats[report].get_array().value();
    simdjson::dom::array got_rows;
    ASSERT_EQ(reports[report].get_array().get(got_rows), simdjson::SUCCESS) << reference << ": no " << report;
    ASSERT_EQ(got_rows.size(), want_rows.size()) << reference << " " << report;
    size_t i = 0;
    for (auto want_it = want_rows.begin(), got_it = got_rows.begin(); want_it != want_rows.end();
         ++want_it, ++got_it, ++i) {
      const element want_row = *want_it;
      const element got_row = *got_it;
      simdjson::dom::object want_object;
      ASSERT_EQ(want_row.get(want_object), simdjson::SUCCESS);
      for (const simdjson::dom::key_value_pair field : want_object) {
        element got_value;
        const std::string where = reference + " " + report + "[" + std::to_string(i) + "]." + std::string(field.key);
        ASSERT_EQ(got_row[field.key].get(got_value), simdjson::SUCCESS) << where;
        ExpectSameValue(got_value, field.value, where);
      }
    }
  }
}

}  // namespace fleetprof::analysis::testing
