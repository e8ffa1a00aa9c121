// The one JSON writer: integer *_ns as JSON numbers, proto field names, enum names, optional
// fields only when set, valid UTF-8 and escapes on any input.

#include "proto/proto_json.h"

#include <string>

#include "fleetprof/v1/capture.pb.h"
#include "fleetprof/v1/profile.pb.h"
#include "gtest/gtest.h"
#include "simdjson.h"

namespace fleetprof {
namespace {

simdjson::dom::element Parse(simdjson::dom::parser& parser, const std::string& json) {
  simdjson::dom::element doc;
  EXPECT_EQ(parser.parse(json).get(doc), simdjson::SUCCESS) << json;
  return doc;
}

TEST(ProtoJson, WritesIntegersAsNumbersAndKeepsZeroes) {
  v1::ProfileSummary s;
  s.set_start_ns(1712195495505582988);
  auto* k = s.add_kernels();
  k->set_name("void f<\"q\">(\\n)\n\x01");
  k->set_kind("communication");
  k->set_total_ns(9223372036854775807);
  auto* d = s.add_devices();
  d->set_busy_ns(-5);  // negative values survive (self time can be negative)
  (*s.mutable_metadata())["rank"] = "0";
  simdjson::dom::parser parser;
  auto doc = Parse(parser, ProtoToJson(s));
  EXPECT_EQ(int64_t(doc["start_ns"].get_int64()), 1712195495505582988);
  EXPECT_EQ(int64_t(doc["kernels"].at(0)["total_ns"].get_int64()), 9223372036854775807);
  EXPECT_EQ(std::string_view(doc["kernels"].at(0)["name"].get_string()), "void f<\"q\">(\\n)\n\x01");
  EXPECT_EQ(int64_t(doc["kernels"].at(0)["min_ns"].get_int64()), 0);  // zero still printed
  EXPECT_EQ(int64_t(doc["devices"].at(0)["busy_ns"].get_int64()), -5);
  EXPECT_EQ(std::string_view(doc["metadata"]["rank"].get_string()), "0");
  EXPECT_EQ(int64_t(doc["unknown_category_events"].get_int64()), 0);
}

TEST(ProtoJson, PrintsOptionalFieldsOnlyWhenSet) {
  v1::XlaOpStat op;
  op.set_name("fusion");
  EXPECT_EQ(ProtoToJson(op), "{\"name\":\"fusion\",\"count\":0,\"total_ns\":0}");
  op.set_bytes_accessed(0);
  op.set_flops_per_second(1.5e11);
  EXPECT_EQ(ProtoToJson(op),
            "{\"name\":\"fusion\",\"count\":0,\"total_ns\":0,\"flops_per_second\":1.5e+11,"
            "\"bytes_accessed\":0}");
}

TEST(ProtoJson, PrintsEnumsByName) {
  v1::Capture capture;
  capture.set_state(v1::Capture::PARTIAL);
  capture.add_targets()->set_state(v1::CaptureTarget::INDEXED);
  capture.mutable_targets(0)->set_kind(v1::Target::kineto);
  simdjson::dom::parser parser;
  auto doc = Parse(parser, ProtoToJson(capture));
  EXPECT_EQ(std::string_view(doc["state"].get_string()), "PARTIAL");
  EXPECT_EQ(std::string_view(doc["targets"].at(0)["state"].get_string()), "INDEXED");
  EXPECT_EQ(std::string_view(doc["targets"].at(0)["kind"].get_string()), "kineto");
  EXPECT_EQ(doc["request"].error(), simdjson::NO_SUCH_FIELD);  // unset message: absent
}

TEST(ProtoJson, SortsMapKeys) {
  v1::ProfileInfo info;
  (*info.mutable_labels())["b"] = "2";
  (*info.mutable_labels())["a"] = "1";
  const std::string json = ProtoToJson(info);
  EXPECT_NE(json.find("\"labels\":{\"a\":\"1\",\"b\":\"2\"}"), std::string::npos) << json;
}

TEST(ProtoJson, EscapesControlCharactersAndQuotes) {
  std::string out;
  AppendJsonString(&out, std::string("a\"b\\c\td\x1f\xc3\xa9", 10));
  EXPECT_EQ(out, "\"a\\\"b\\\\c\\td\\u001f\xc3\xa9\"");
}

TEST(ProtoJson, ReplacesInvalidUtf8SoTheOutputStaysValid) {
  std::string out;
  // A lone continuation byte, a cut 3-byte sequence, an overlong '/', a surrogate, then valid 4-byte.
  AppendJsonString(&out, std::string("a\x80" "b\xe2\x82" "c\xc0\xaf" "d\xed\xa0\x80" "e\xf0\x9f\x98\x80"));
  EXPECT_EQ(out,
            "\"a\xEF\xBF\xBD" "b\xEF\xBF\xBD\xEF\xBF\xBD" "c\xEF\xBF\xBD\xEF\xBF\xBD"
            "d\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD" "e\xf0\x9f\x98\x80\"");
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  EXPECT_EQ(parser.parse(out).get(doc), simdjson::SUCCESS);
}

TEST(ProtoJson, ReadsRequestBodiesAndNamesUnknownFields) {
  v1::StartCaptureRequest request;
  ASSERT_TRUE(ProtoFromJson(R"({"job":"llama","duration_ms":2000,"node":"n1"})", &request).ok());
  EXPECT_EQ(request.job(), "llama");
  EXPECT_EQ(request.duration_ms(), 2000);
  absl::Status bad = ProtoFromJson(R"({"job":"x","durashun_ms":1})", &request);
  EXPECT_TRUE(absl::IsInvalidArgument(bad));
  EXPECT_NE(bad.message().find("durashun_ms"), std::string_view::npos) << bad.message();
}

}  // namespace
}  // namespace fleetprof
