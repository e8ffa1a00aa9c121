// The fast lane (analysis/kineto_event_scan.h) must read every event it takes exactly as the
// general reader does, and leave every other one to it. Each case reads the same text with the
// lane on and off and compares everything (same_trace_events.h): on the corpus, and on events
// mutated byte by byte (every deletion and a set of substitutions), so that each way out of
// the lane and each field handler is met by malformed and unusual input.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analysis/byte_source.h"
#include "analysis/kineto_json_reader.h"
#include "analysis/trace_events.h"
#include "gtest/gtest.h"
#include "tests/analysis/same_trace_events.h"
#include "tests/test_support.h"

namespace fleetprof::analysis {
namespace {

using testing_events::ExpectSame;
using testing_events::Gunzipped;
using testing_events::Read;

Read ReadWith(const std::string& text, bool scan, size_t chunk, const TraceLimits& limits = TraceLimits()) {
  SetKinetoEventScan(scan);
  SetKinetoSplitMinBytes(0);  // one reader: what is compared here is the lane
  Read read;
  read.events.limits = limits;
  std::unique_ptr<ByteSource> source = OpenStringSource("trace.json", text, chunk);
  read.status = ReadKinetoJson(*source, &read.events);
  SetKinetoEventScan(true);
  SetKinetoSplitMinBytes(uint64_t{8} << 20);
  return read;
}

void ExpectSameBothWays(const std::string& text, size_t chunk = SIZE_MAX,
                        const TraceLimits& limits = TraceLimits()) {
  SCOPED_TRACE(text.size() < 2000 ? text : text.substr(0, 200));
  ExpectSame(ReadWith(text, false, chunk, limits), ReadWith(text, true, chunk, limits));
}

// Events of every kind the readers tell apart, in the layouts PyTorch writes and some it
// does not: each is mutated below.
const std::vector<std::string>& Events() {
  static const std::vector<std::string> events = {
      R"json({"ph": "X", "cat": "kernel", "name": "void gemm<float>(int)", "pid": 0, "tid": 7, "ts": 1712195495781933.880, "dur": 93.984, "args": {"External id": 13675, "queued": 0, "device": 0, "context": 1, "stream": 7, "correlation": 178786, "registers per thread": 22, "blocks per SM": 156.800003, "grid": [12544, 1, 1], "block": [128, 1, 1], "est. achieved occupancy %": 100}})json",
      R"json({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1102, "tid": 1102, "ts": 1712195497025683.857, "dur": 6.454, "args": {"External id": 444172, "cbid": 211, "correlation": 623986}})json",
      R"json({"ph": "X", "cat": "cpu_op", "name": "aten::add_", "pid": 1102, "tid": "1262", "ts": 1712195497089771.097, "dur": 9.046, "args": {"External id": 446734, "Ev Idx": 11727, "Input Dims": [[64, 3], []], "Input type": ["float", "Scalar"]}})json",
      R"json({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7, "ts": 10.5, "dur": 2, "args": {"device": 0, "correlation": 5, "bytes": 4096, "memory bandwidth (GB/s)": 1.2}})json",
      R"json({"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", "pid": 0, "tid": 20, "ts": 100, "dur": 50, "args": {"device": "0", "correlation": 9, "In msg nelems": 1048576, "dtype": "Float", "Group size": 8}})json",
      R"json({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1102, "tid": 1102, "ts": 20, "args": {"Device Type": 1, "Device Id": 0, "Addr": 140, "Bytes": 512, "Total Allocated": 2048, "Total Reserved": 4096}})json",
      R"json({"ph":"X","cat":"user_annotation","name":"ProfilerStep#3","pid":1,"tid":1,"ts":0,"dur":1e3,"args":{}})json",
      R"json({ "name" : "Optimizer.step" , "ph" : "X" , "ts" : -5.25 , "dur" : 0.001 , "pid" : "CPU functions" , "tid" : 3 , "args" : null })json",
      R"json({"ph": "s", "id": 623986, "pid": 1102, "tid": 1102, "ts": 1.5, "cat": "ac2g", "name": "ac2g", "bp": "e"})json",
      R"json({"name": "process_name", "ph": "M", "ts": 0, "pid": 0, "tid": 0, "args": {"name": "GPU 0"}})json",
      "{\"ph\":\t\"X\",\n \"cat\": \"python_function\",\r\n \"name\": \"nn.Module: Conv2d_0\", \"pid\": 1, \"tid\": 1, \"ts\": 3, \"dur\": 4, \"args\": {\"Python id\": 3, \"Python parent id\": 2, \"flag\": true, \"none\": null}}",
      R"json({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 1, "args": {"device": 0, "nested": {"a": [1, {"b": 2}]}, "correlation": 4}})json",
      R"json({"ph": "X", "cat": "cpu_op", "name": "a\"b\\c\u00e9\ud83d\ude00", "pid": 1, "tid": 1, "ts": 1, "dur": 1})json",
      R"json({"ph": "X", "ph": "X", "cat": "cpu_op", "name": "first", "name": "second", "pid": 1, "tid": 1, "ts": 1, "ts": 2, "dur": 1, "args": {"correlation": 1, "correlation": "2"}})json",
      // Deeper than the lane's own bound (32) and than a --max_trace_depth below 40.
      absl::StrCat(R"json({"ph": "X", "cat": "cpu_op", "name": "deep", "pid": 1, "tid": 1, "ts": 1, "dur": 1, "args": {"Input Dims": )json",
                   std::string(40, '['), std::string(40, ']'), R"json(, "correlation": 3}})json"),
  };
  return events;
}

std::string Trace(const std::string& event) {
  return absl::StrCat(R"({"schemaVersion": 1, "traceEvents": [)", Events()[1], ",\n", event, ",\n", Events()[0],
                      R"(], "displayTimeUnit": "ms"})");
}

TEST(KinetoEventScan, EventsOfEveryKindReadAsTheGeneralReaderReadsThem) {
  const int64_t scanned_before = KinetoEventsScanned();
  for (const std::string& event : Events()) ExpectSameBothWays(Trace(event));
  // The lane is used (each trace has at least its two plain events), and not for everything.
  EXPECT_GE(KinetoEventsScanned() - scanned_before, 2 * static_cast<int64_t>(Events().size()));
}

TEST(KinetoEventScan, EveryDeletionAndSubstitutionReadsAsTheGeneralReaderReadsIt) {
  const std::string substitutes = "\"\\{}[],: 0x-.e\n";
  int cases = 0;
  for (const std::string& event : Events()) {
    for (size_t i = 0; i < event.size(); ++i) {
      std::string deleted = event;
      deleted.erase(i, 1);
      ExpectSameBothWays(Trace(deleted));
      for (char c : substitutes) {
        if (c == event[i]) continue;
        std::string changed = event;
        changed[i] = c;
        ExpectSameBothWays(Trace(changed));
        ++cases;
      }
      if (HasFatalFailure()) return;
    }
  }
  EXPECT_GT(cases, 10000);
}

// Events cut by the end of what a read returned, and by the end of the text (a trace cut
// short), at every byte of the event.
TEST(KinetoEventScan, EventsCutAtEveryByteReadAsTheGeneralReaderReadsThem) {
  for (const std::string& event : {Events()[0], Events()[4], Events()[5]}) {
    const std::string text = Trace(event);
    for (size_t chunk : {size_t{1}, size_t{7}, size_t{61}, size_t{4093}}) ExpectSameBothWays(text, chunk);
    for (size_t cut = 0; cut < text.size(); ++cut) ExpectSameBothWays(text.substr(0, cut));
  }
}

// What the lane leaves to the general reader because the general reader would cut or refuse
// it: names past --max_trace_name_bytes, keys past the key cap, nesting past --max_trace_depth.
TEST(KinetoEventScan, LimitsApplyAsInTheGeneralReader) {
  TraceLimits small;
  small.max_name_bytes = 8;
  for (const std::string& event : Events()) ExpectSameBothWays(Trace(event), SIZE_MAX, small);
  const std::string long_key = absl::StrCat(R"({"ph": "X", ")", std::string(5000, 'k'),
                                            R"(": 1, "cat": "cpu_op", "name": "n", "pid": 1, "tid": 1, "ts": 1, "dur": 1})");
  ExpectSameBothWays(Trace(long_key));
  for (int64_t depth : {0, 1, 2, 3, 39, 40}) {
    TraceLimits shallow;
    shallow.max_trace_depth = depth;
    for (const std::string& event : Events()) ExpectSameBothWays(Trace(event), SIZE_MAX, shallow);
  }
  const std::string out_of_range =
      R"json({"ph": "X", "cat": "cpu_op", "name": "n", "pid": 1, "tid": 1, "ts": 99999999999999999999, "dur": 1})json";
  ExpectSameBothWays(Trace(out_of_range));
}

// Every Kineto file of the corpus, whole and read in small pieces: the same both ways, and
// most events by the lane (they are all in the layout it is for).
TEST(KinetoEventScan, CorpusFilesReadAsTheGeneralReaderReadsThem) {
  const std::string dir = fleetprof::testing::CorpusPath("kineto");
  FLEETPROF_REQUIRE_PATH(dir);
  for (const char* name : testing_events::kKinetoCorpusFiles) {
    SCOPED_TRACE(name);
    const std::string gz = absl::StrCat(dir, "/", name);
    FLEETPROF_REQUIRE_PATH(gz);
    const std::string text = Gunzipped(gz);
    const int64_t scanned_before = KinetoEventsScanned();
    const Read scanned = ReadWith(text, true, SIZE_MAX);
    const int64_t by_lane = KinetoEventsScanned() - scanned_before;
    ExpectSame(ReadWith(text, false, SIZE_MAX), scanned);
    EXPECT_GE(by_lane * 10, scanned.events.events * 9) << by_lane << " of " << scanned.events.events;
    ExpectSame(ReadWith(text, false, 4093), ReadWith(text, true, 4093));
  }
}

}  // namespace
}  // namespace fleetprof::analysis
