// The compiled-plan writer (proto/json_plan.h behind proto/proto_json.h) prints exactly the
// bytes of the reflection walk it replaced (tests/analysis/reference_proto_json.h), for random
// messages of every API type, of a type with every kind of field, and of protobuf's own
// proto2 and recursive types; and trace windows, its hot path, stay valid JSON with integer ns.

#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "fleetprof/v1/query.pb.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/message_differencer.h"
#include "querier/v1/querier.pb.h"
#include "google/protobuf/descriptor.pb.h"
#include "google/protobuf/struct.pb.h"
#include "gtest/gtest.h"
#include "json_kinds_test.pb.h"
#include "proto/api_files.h"
#include "proto/proto_json.h"
#include "simdjson.h"
#include "tests/analysis/random_message.h"
#include "tests/analysis/reference_proto_json.h"

namespace fleetprof {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::DescriptorPool;
using google::protobuf::Message;
using google::protobuf::MessageFactory;

void AddWithNested(const Descriptor* d, std::vector<const Descriptor*>* out) {
  out->push_back(d);
  for (int i = 0; i < d->nested_type_count(); ++i) AddWithNested(d->nested_type(i), out);
}

// Every message type of fleetprof's API, map entries included, and the test types.
std::vector<const Descriptor*> AllTypes() {
  std::vector<const Descriptor*> types;
  for (const std::string& name : ApiProtoFileNames()) {
    const auto* file = DescriptorPool::generated_pool()->FindFileByName(name);
    EXPECT_NE(file, nullptr) << name;
    if (file == nullptr) continue;
    for (int i = 0; i < file->message_type_count(); ++i) AddWithNested(file->message_type(i), &types);
  }
  AddWithNested(test::AllKinds::descriptor(), &types);
  AddWithNested(test::Unwrapped::descriptor(), &types);
  AddWithNested(google::protobuf::FileDescriptorProto::descriptor(), &types);  // proto2, closed enums
  AddWithNested(google::protobuf::Struct::descriptor(), &types);  // recursive through a map
  return types;
}

void ExpectSameAsReference(const Message& m) {
  const std::string fast = ProtoToJson(m);
  const std::string reference = reference::ProtoToJson(m);
  ASSERT_EQ(fast, reference) << m.GetTypeName() << ": " << m.ShortDebugString();
  // And appended after existing text, as AppendProtoJson callers do.
  std::string appended = "[1,";
  AppendProtoJson(&appended, m);
  ASSERT_EQ(appended, "[1," + reference);
}

TEST(ProtoJsonPlan, RandomMessagesOfEveryTypePrintAsTheReferenceWriterDoes) {
  testing::RandomMessageFiller filler(20261203);
  const auto types = AllTypes();
  ASSERT_GT(types.size(), 100u);
  for (const Descriptor* type : types) {
    const Message* prototype = MessageFactory::generated_factory()->GetPrototype(type);
    ASSERT_NE(prototype, nullptr) << type->full_name();
    ExpectSameAsReference(*prototype);  // every field at its zero, every list empty
    for (int i = 0; i < 40; ++i) {
      std::unique_ptr<Message> m(prototype->New());
      filler.Fill(m.get());
      ExpectSameAsReference(*m);
    }
  }
}

TEST(ProtoJsonPlan, EveryKindOfFieldPrintsAsTheReferenceWriterDoes) {
  testing::RandomMessageFiller filler(7);
  for (int i = 0; i < 1000; ++i) {
    test::AllKinds m;
    filler.Fill(&m, 2);
    ExpectSameAsReference(m);
  }
}

TEST(ProtoJsonPlan, StringsEscapeAsTheReferenceWriterDoes) {
  testing::RandomMessageFiller filler(11);
  std::vector<std::string> strings = {"", "\"", "\\", std::string(1, '\0'), "\x7f", "\xff", "\xe4\xb8",
                                      "12345678", "1234567\"", "\"1234567", std::string(4095, 'a') + "\xe4\xb8\xad",
                                      std::string(4094, 'a') + "\xf0\x9f\x98\x80" + std::string(9, '\x01')};
  for (int i = 0; i < 5000; ++i) strings.push_back(filler.String());
  for (const std::string& s : strings) {
    std::string fast, reference;
    AppendJsonString(&fast, s);
    reference::AppendJsonString(&reference, s);
    ASSERT_EQ(fast, reference) << s;
  }
}

TEST(ProtoJsonPlan, ExtremesAndOddStringsInATraceWindow) {
  v1::TraceWindow w;
  w.set_profile_id("p\"1\\\n\x01\xc3\xa9\xff");
  w.set_start_ns(std::numeric_limits<int64_t>::min());
  w.set_end_ns(std::numeric_limits<int64_t>::max());
  w.add_tracks();  // a track with nothing set: empty lists, zero values
  v1::TraceTrack* t = w.add_tracks();
  t->set_id("stream 7");
  t->set_kind("device");
  for (int i = 0; i < 3; ++i) {
    v1::TraceEvent* e = t->add_events();
    e->set_name(i == 0 ? "" : i == 1 ? "void k<\"x\">(\t)\xe4\xb8\xad" : "\xed\xa0\x80");
    e->set_start_ns(i == 2 ? std::numeric_limits<int64_t>::max() : 0);
    e->set_dur_ns(i == 2 ? std::numeric_limits<int64_t>::min() : -1);
    if (i == 1) e->set_correlation(0);  // explicitly zero: printed
    if (i == 2) e->mutable_args()->set_bytes(std::numeric_limits<int64_t>::min());
  }
  t->add_merged()->set_max_value(0);
  t->add_merged();
  ExpectSameAsReference(w);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  const std::string json = ProtoToJson(w);
  ASSERT_EQ(parser.parse(json).get(doc), simdjson::SUCCESS) << json;
  EXPECT_EQ(int64_t(doc["start_ns"].get_int64()), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(int64_t(doc["tracks"].at(1)["events"].at(2)["start_ns"].get_int64()), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(int64_t(doc["tracks"].at(1)["events"].at(1)["correlation"].get_int64()), 0);
  EXPECT_EQ(doc["tracks"].at(1)["events"].at(0)["correlation"].error(), simdjson::NO_SUCH_FIELD);
  EXPECT_EQ(std::string_view(doc["tracks"].at(1)["events"].at(2)["name"].get_string()),
            "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");  // each byte of the surrogate replaced
  EXPECT_EQ(doc["tracks"].at(0)["events"].get_array().size(), 0u);
  EXPECT_EQ(int64_t(doc["tracks"].at(1)["merged"].at(1)["count"].get_int64()), 0);
}

TEST(ProtoJsonPlan, ThreadsBuildingPlansAtOnceAllPrintTheSame) {
  // Plans are built on first use: writers racing to build them must agree with the reference.
  testing::RandomMessageFiller filler(3);
  std::vector<test::AllKinds> messages(8);
  for (auto& m : messages) filler.Fill(&m, 3);
  std::vector<std::string> out(messages.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < messages.size(); ++i) {
    threads.emplace_back([&, i] {
      for (int k = 0; k < 50; ++k) out[i] = ProtoToJson(messages[i]);
    });
  }
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < messages.size(); ++i) EXPECT_EQ(out[i], reference::ProtoToJson(messages[i]));
}

// The proto3 style (Pyroscope's Connect API): json_name keys, 64-bit integers as strings,
// the rest as fleetprof's; protobuf's own parser reads every answer type back unchanged.
TEST(ProtoJsonPlan, Proto3StyleUsesJsonNamesQuotesInt64AndReadsBackThroughProtobuf) {
  querier::v1::SelectMergeStacktracesResponse merged;
  v1::FlameGraph* graph = merged.mutable_flamegraph();
  graph->add_names("total");
  graph->add_levels()->add_values(std::numeric_limits<int64_t>::max());
  graph->set_total(42);
  graph->set_max_self(7);
  EXPECT_EQ(ProtoToProto3Json(merged),
            R"({"flamegraph":{"names":["total"],"levels":[{"values":["9223372036854775807"]}],"total":"42","maxSelf":"7"}})");
  querier::v1::ProfileTypesResponse types;
  types.add_profile_types()->set_id("a:b:c:d:e");
  EXPECT_EQ(ProtoToProto3Json(types),
            R"({"profileTypes":[{"ID":"a:b:c:d:e","name":"","sampleType":"","sampleUnit":"","periodType":"","periodUnit":""}]})");
  querier::v1::SelectSeriesResponse series;
  types::v1::Series* one = series.add_series();
  one->add_labels()->set_name("node");
  one->add_points()->set_timestamp(1700000000123);
  one->mutable_points(0)->set_value(1.5);
  EXPECT_EQ(ProtoToProto3Json(series),
            R"({"series":[{"labels":[{"name":"node","value":""}],"points":[{"value":1.5,"timestamp":"1700000000123"}]}]})");
  // And fleetprof's own style is untouched by the other plan of the same type.
  EXPECT_EQ(ProtoToJson(*graph), R"({"names":["total"],"levels":[{"values":[9223372036854775807]}],"total":42,"max_self":7})");
  for (const google::protobuf::Message* m : std::initializer_list<const google::protobuf::Message*>{&merged, &types, &series}) {
    std::unique_ptr<google::protobuf::Message> back(m->New());
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(ProtoToProto3Json(*m), back.get()).ok());
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*m, *back)) << m->GetTypeName();
  }
}

}  // namespace
}  // namespace fleetprof
