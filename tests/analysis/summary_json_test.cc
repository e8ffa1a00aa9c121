#include "analysis/summary_json.h"

#include <string>

#include "gtest/gtest.h"
#include "simdjson.h"

namespace fleetprof::analysis {
namespace {

TraceSummary SampleSummary() {
  TraceSummary s;
  s.format = TraceFormat::kKinetoJson;
  s.start_ns = 1712195495505582988;
  s.end_ns = 1712195495985612167;
  s.events = 10;
  s.skipped_events = 1;
  DeviceSummary d;
  d.device = "0";
  d.events = 2;
  d.busy_ns = -5;  // negative values must survive (self time can be negative)
  s.devices.push_back(d);
  KernelSummary k;
  k.name = "void f<\"q\">(\\n)\n\x01";
  k.kind = ActivityKind::kCommunication;
  k.total_ns = 9223372036854775807;
  s.kernels.push_back(k);
  OpSummary o;
  o.name = "aten::mm";
  o.self_ns = -3;
  s.ops.push_back(o);
  StepSummary step;
  step.step = 101;
  s.steps.push_back(step);
  MemorySummary m;
  m.device = "cpu";
  m.timeline.push_back({5, 6});
  s.memory.push_back(m);
  s.metadata["rank"] = "0";
  return s;
}

TEST(SummaryJson, WritesValidJsonWithReferenceFieldNames) {
  std::string json = SummaryToJson(SampleSummary());
  simdjson::dom::parser parser;
  simdjson::padded_string text(json);
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(text).get(doc), simdjson::SUCCESS) << json;
  EXPECT_EQ(std::string_view(doc["format"].get_string()), "kineto_json");
  EXPECT_EQ(int64_t(doc["start_ns"].get_int64()), 1712195495505582988);
  EXPECT_EQ(int64_t(doc["skipped_events"].get_int64()), 1);
  simdjson::dom::element device = doc["devices"].at(0);
  for (const char* field : {"device", "events", "start_ns", "end_ns", "span_ns", "busy_ns",
                            "idle_ns", "compute_ns", "communication_ns", "memory_ns"}) {
    EXPECT_EQ(device[field].error(), simdjson::SUCCESS) << field;
  }
  EXPECT_EQ(int64_t(device["busy_ns"].get_int64()), -5);
  simdjson::dom::element kernel = doc["kernels"].at(0);
  EXPECT_EQ(std::string_view(kernel["name"].get_string()), "void f<\"q\">(\\n)\n\x01");
  EXPECT_EQ(std::string_view(kernel["kind"].get_string()), "communication");
  EXPECT_EQ(int64_t(kernel["total_ns"].get_int64()), 9223372036854775807);
  for (const char* field : {"name", "kind", "count", "total_ns", "min_ns", "max_ns"}) {
    EXPECT_EQ(kernel[field].error(), simdjson::SUCCESS) << field;
  }
  simdjson::dom::element op = doc["ops"].at(0);
  for (const char* field :
       {"name", "count", "total_ns", "self_ns", "device_self_ns", "device_total_ns"}) {
    EXPECT_EQ(op[field].error(), simdjson::SUCCESS) << field;
  }
  EXPECT_EQ(int64_t(doc["steps"].at(0)["step"].get_int64()), 101);
  EXPECT_EQ(int64_t(doc["memory"].at(0)["timeline"].at(0)["allocated_bytes"].get_int64()), 6);
  EXPECT_EQ(std::string_view(doc["metadata"]["rank"].get_string()), "0");
}

TEST(SummaryJson, WritesOnlyTheRequestedSections) {
  SummaryJsonSections only_kernels;
  only_kernels.devices = only_kernels.ops = only_kernels.steps = false;
  only_kernels.memory = only_kernels.metadata = false;
  TraceSummary s;
  EXPECT_EQ(SummaryToJson(s, only_kernels), "{\"kernels\":[]}");
}

TEST(SummaryJson, EscapesControlCharactersAndQuotes) {
  std::string out;
  AppendJsonString(&out, std::string("a\"b\\c\td\x1f\xc3\xa9", 10));
  EXPECT_EQ(out, "\"a\\\"b\\\\c\\td\\u001f\xc3\xa9\"");
}

}  // namespace
}  // namespace fleetprof::analysis
