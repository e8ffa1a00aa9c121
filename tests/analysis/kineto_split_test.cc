// A Chrome trace read by two threads (kineto_json_reader.h: the far part) must give exactly what
// one reader gives: the same events in the same order, the same name ids, the same counts, and
// for a bad file the same error. Each case reads the same text both ways and compares all.

#include <cstdio>
#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "analysis/byte_source.h"
#include "analysis/kineto_json_reader.h"
#include "analysis/trace_analyzer.h"
#include "analysis/trace_events.h"
#include "common/gzip_member.h"
#include "gtest/gtest.h"
#include "proto/proto_json.h"
#include "proto/summary_codec.h"
#include "tests/analysis/same_trace_events.h"
#include "tests/test_support.h"

namespace fleetprof::analysis {
namespace {

using testing_events::ExpectSame;
using testing_events::Gunzipped;
using testing_events::Read;

Read ReadWith(const std::string& text, uint64_t split_min_bytes, size_t chunk, const TraceLimits& limits) {
  SetKinetoSplitMinBytes(split_min_bytes);
  Read read;
  read.events.limits = limits;
  std::unique_ptr<ByteSource> source = OpenStringSource("trace.json", text, chunk);
  read.status = ReadKinetoJson(*source, &read.events);
  SetKinetoSplitMinBytes(uint64_t{8} << 20);
  return read;
}

// Event i of a varied trace: kernels, copies, collectives, host ops of two threads, runtime
// calls, memory samples, flows and metadata, names that appear first in either half, escapes,
// and args whose arrays of objects look like event boundaries.
std::string Event(int i) {
  const std::string ts = absl::StrCat(1000 + i * 7, ".", i % 1000);
  switch (i % 9) {
    case 0:
      return absl::StrCat(R"({"ph": "X", "cat": "kernel", "name": "gemm_)", i % 13, R"(", "pid": 0, "tid": 7, "ts": )", ts,
                          R"(, "dur": 3.5, "args": {"device": 0, "stream": 7, "correlation": )", i, "}}");
    case 1:
      return absl::StrCat(R"({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 11, "ts": )", ts,
                          R"(, "dur": 1, "args": {"correlation": )", i - 1, "}}");
    case 2:
      return absl::StrCat(R"({"ph": "X", "cat": "cpu_op", "name": "aten::op_)", i % 17, R"(", "pid": 10, "tid": )", 10 + i % 2,
                          R"(, "ts": )", ts, R"(, "dur": 20, "args": {"Input Dims": [[1, 2], [3]], "list": [{"a": 1}, {"b": "}, {"}]}})");
    case 3:
      return absl::StrCat(R"({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "pid": 0, "tid": 8, "ts": )", ts,
                          R"(, "dur": 2, "args": {"device": 0, "bytes": )", 100 + i, "}}");
    case 4:
      return absl::StrCat(R"({"ph": "i", "s": "t", "name": "[memory]", "pid": 10, "tid": 10, "ts": )", ts,
                          R"(, "args": {"Device Id": )", i % 2 == 0 ? 0 : -1, R"(, "Total Allocated": )", i * 1000,
                          R"(, "Bytes": 512}})");
    case 5:
      return absl::StrCat(R"({"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce", "pid": 0, "tid": 9, "ts": )", ts,
                          R"(, "dur": 4, "args": {"device": 1, "In msg nelems": )", i, R"(, "dtype": "Float"}})");
    case 6:
      return absl::StrCat(R"({"ph": "f", "id": )", i, R"(, "pid": 10, "tid": 10, "ts": )", ts,
                          R"(, "cat": "ac2g", "name": "ac2g", "bp": "e"})");
    case 7:
      return absl::StrCat(R"({"ph": "X", "cat": "user_annotation", "name": "step \"q\" \u00e9 )", i % 5,
                          R"(", "pid": 10, "tid": 10, "ts": )", ts, R"(, "dur": 50})");
    default:
      return absl::StrCat(R"({"name": "thread_name", "ph": "M", "pid": 10, "tid": )", i,
                          R"(, "args": {"name": "thread )", i, R"("}})");
  }
}

// `events` events after `pad` bytes of a leading key, so that the middle falls at every kind
// of place; `separator` between events.
std::string Trace(int events, int pad, const std::string& separator) {
  std::string text = absl::StrCat("{\n  \"pad\": \"", std::string(pad, 'x'),
                                  "\",\n  \"deviceProperties\": [{\"id\": 0, \"name\": \"V100\"}],\n"
                                  "  \"traceEvents\": [\n");
  for (int i = 0; i < events; ++i) {
    if (i > 0) text += separator;
    text += Event(i);
  }
  absl::StrAppend(&text, "\n  ],\n  \"distributedInfo\": {\"rank\": 3},\n  \"traceName\": \"t\"\n}\n");
  return text;
}

TEST(KinetoSplit, EqualsOneReaderWhereverTheMiddleFalls) {
  const int64_t taken_before = KinetoFarPartsTaken();
  int cases = 0;
  for (const std::string separator : {",\n", ", ", ",\n    "}) {
    for (int pad = 0; pad < 400; pad += 7) {
      const std::string text = Trace(300, pad, separator);
      for (size_t chunk : {size_t{SIZE_MAX}, size_t{37}}) {
        SCOPED_TRACE(absl::StrCat("pad ", pad, " chunk ", chunk, " separator '", separator, "'"));
        ExpectSame(ReadWith(text, 0, chunk, TraceLimits()), ReadWith(text, 1, chunk, TraceLimits()));
        ++cases;
      }
    }
  }
  // Every middle is followed by an event boundary the first reader confirms.
  EXPECT_EQ(KinetoFarPartsTaken() - taken_before, cases);
}

TEST(KinetoSplit, BareArraysAndRepeatedEventLists) {
  const int64_t taken_before = KinetoFarPartsTaken();
  std::string bare = "[";
  for (int i = 0; i < 200; ++i) absl::StrAppend(&bare, i > 0 ? ",\n" : "", Event(i));
  bare += "]";
  ExpectSame(ReadWith(bare, 0, SIZE_MAX, TraceLimits()), ReadWith(bare, 1, SIZE_MAX, TraceLimits()));
  // A second "traceEvents" appends to the first, for the split reader too.
  std::string twice = Trace(200, 0, ",\n");
  twice.insert(twice.rfind('}'), absl::StrCat(", \"traceEvents\": [", Event(0), ",\n", Event(2), "]"));
  ExpectSame(ReadWith(twice, 0, SIZE_MAX, TraceLimits()), ReadWith(twice, 1, SIZE_MAX, TraceLimits()));
  EXPECT_EQ(KinetoFarPartsTaken() - taken_before, 2);
}

TEST(KinetoSplit, ErrorsInEitherHalfAreOneReadersErrors) {
  const std::string good = Trace(400, 0, ",\n");
  const size_t far = good.size() * 3 / 4;
  const size_t near = good.size() / 4;
  std::vector<std::pair<std::string, std::string>> cases;
  for (size_t at : {near, far}) {
    const size_t event = good.find("\"ts\": ", at);
    std::string out_of_range = good;
    out_of_range.replace(event, 6, "\"ts\": 1e300, \"x\": ");
    cases.emplace_back("time out of range", out_of_range);
    std::string syntax = good;
    syntax.insert(good.find(",\n", at), "]");
    cases.emplace_back("syntax", syntax);
    cases.emplace_back("truncated", good.substr(0, at));
  }
  for (const auto& [what, text] : cases) {
    SCOPED_TRACE(what);
    const Read one = ReadWith(text, 0, SIZE_MAX, TraceLimits());
    EXPECT_FALSE(one.status.ok());
    ExpectSame(one, ReadWith(text, 1, SIZE_MAX, TraceLimits()));
  }
}

TEST(KinetoSplit, LimitsEndWhereOneReaderEnds) {
  const std::string text = Trace(400, 0, ",\n");
  const Read all = ReadWith(text, 0, SIZE_MAX, TraceLimits());
  ASSERT_TRUE(all.status.ok());
  TraceLimits events;
  events.max_trace_events = all.events.events - 1;
  TraceLimits names;
  names.max_trace_names = static_cast<int64_t>(all.events.names.size()) - 1;
  for (const TraceLimits& limits : {events, names}) {
    const Read one = ReadWith(text, 0, SIZE_MAX, limits);
    EXPECT_EQ(one.status.code(), absl::StatusCode::kResourceExhausted) << one.status;
    ExpectSame(one, ReadWith(text, 1, SIZE_MAX, limits));
  }
  // Exactly at the limits both readers succeed.
  TraceLimits exact;
  exact.max_trace_events = all.events.events;
  exact.max_trace_names = static_cast<int64_t>(all.events.names.size());
  ExpectSame(all, ReadWith(text, 1, SIZE_MAX, exact));
}

std::string SummaryJson(const std::string& path, uint64_t split_min_bytes) {
  SetKinetoSplitMinBytes(split_min_bytes);
  absl::StatusOr<TraceSummary> summary = AnalyzeTraceFile(path);
  SetKinetoSplitMinBytes(uint64_t{8} << 20);
  return summary.ok() ? ProtoToJson(SummaryToProto(*summary)) : summary.status().ToString();
}

// Every Kineto file of the corpus, whole (from its .json.gz and as plain JSON, as the CLI reads
// them) and cut to the 64 KiB the fuzzers start from: split or not, the same.
TEST(KinetoSplit, CorpusFilesWholeAndCut) {
  const std::string dir = fleetprof::testing::CorpusPath("kineto");
  FLEETPROF_REQUIRE_PATH(dir);
  const int64_t taken_before = KinetoFarPartsTaken();
  int files = 0;
  for (const char* name : testing_events::kKinetoCorpusFiles) {
    SCOPED_TRACE(name);
    const std::string gz = absl::StrCat(dir, "/", name);
    FLEETPROF_REQUIRE_PATH(gz);
    const std::string text = Gunzipped(gz);
    ExpectSame(ReadWith(text, 0, SIZE_MAX, TraceLimits()), ReadWith(text, 1, SIZE_MAX, TraceLimits()));
    const std::string cut = text.substr(0, 65536);
    ExpectSame(ReadWith(cut, 0, 4093, TraceLimits()), ReadWith(cut, 1, 4093, TraceLimits()));
    EXPECT_EQ(SummaryJson(gz, 0), SummaryJson(gz, 1));
    const std::string plain = absl::StrCat(::testing::TempDir(), "/split_", name, ".json");
    {
      FILE* f = std::fopen(plain.c_str(), "wb");
      ASSERT_NE(f, nullptr);
      ASSERT_EQ(std::fwrite(text.data(), 1, text.size(), f), text.size());
      std::fclose(f);
    }
    EXPECT_EQ(SummaryJson(plain, 0), SummaryJson(plain, 1));
    std::remove(plain.c_str());
    ++files;
  }
  // Whole files (text, .json.gz and plain file through the analysis); never a cut one, whose
  // far part ends in an error and is dropped.
  EXPECT_EQ(KinetoFarPartsTaken() - taken_before, 3 * files);
}

std::string WriteTemp(const std::string& name, const std::string& bytes) {
  const std::string path = absl::StrCat(::testing::TempDir(), "/split_", name);
  FILE* f = std::fopen(path.c_str(), "wb");
  EXPECT_NE(f, nullptr);
  if (f == nullptr) return path;
  EXPECT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
  std::fclose(f);
  return path;
}

// Gzip files whose far part inflates on its own thread (a reopened source inflates inline):
// several members, and streams cut or damaged before or after the middle, give one reader's
// answer or error.
TEST(KinetoSplit, GzipFilesWholeCutAndDamaged) {
  const std::string text = Trace(3000, 0, ",\n");
  const std::string one = GzipMember(text);
  const std::string two = GzipMember(text.substr(0, text.size() / 3)) + GzipMember(text.substr(text.size() / 3));
  std::string damaged = one;
  damaged[damaged.size() * 3 / 4] ^= 0x55;
  const std::vector<std::pair<std::string, std::string>> files = {
      {"one.json.gz", one},
      {"two_members.json.gz", two},
      {"cut_far.json.gz", one.substr(0, one.size() * 3 / 4)},
      {"cut_near.json.gz", one.substr(0, one.size() / 4)},
      {"damaged.json.gz", damaged},
      {"trailing.json.gz", one + "garbage"},
  };
  const int64_t taken_before = KinetoFarPartsTaken();
  for (const auto& [name, bytes] : files) {
    SCOPED_TRACE(name);
    const std::string path = WriteTemp(name, bytes);
    EXPECT_EQ(SummaryJson(path, 0), SummaryJson(path, 1));
    std::remove(path.c_str());
  }
  EXPECT_GE(KinetoFarPartsTaken() - taken_before, 2);  // the two whole files
}

}  // namespace
}  // namespace fleetprof::analysis
