// The trace window against a brute-force answer computed from the raw corpus files in this
// test, independently of fleetprof's readers: simdjson for Chrome-trace JSON, protobuf's own
// parse for XSpace, and the event classes of docs/analysis.md written out again.
// Also: export to Chrome-trace JSON and back gives the same devices, kernels and ops.

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "analysis/trace_analyzer.h"
#include "gtest/gtest.h"
#include "proto/proto_json.h"
#include "proto/summary_codec.h"
#include "simdjson.h"
#include "test_xplane.pb.h"
#include "tests/analysis/analysis_test_util.h"
#include "tests/test_support.h"
#include "tests/timeline/memory_timeline_store.h"
#include "timeline/chrome_trace_export.h"
#include "timeline/timeline_builder.h"
#include "timeline/trace_window.h"

namespace fleetprof::timeline {
namespace {

using fleetprof::testing::CorpusPath;
using timeline::testing::MemoryTimelineStore;

struct BfEvent {
  std::string name;
  int64_t start = 0;
  int64_t dur = 0;
  bool operator<(const BfEvent& o) const {
    return std::tie(start, o.dur, name) < std::tie(o.start, dur, o.name);
  }
  bool operator==(const BfEvent& o) const { return start == o.start && dur == o.dur && name == o.name; }
};
using BfTracks = std::map<std::string, std::vector<BfEvent>>;

std::ostream& operator<<(std::ostream& os, const BfEvent& e) {
  return os << "{" << e.name << " " << e.start << "+" << e.dur << "}";
}

// Chrome-trace microseconds to ns: digits beyond the ns truncated, no float on the way.
bool MicrosToNs(std::string_view text, int64_t* ns) {
  bool negative = !text.empty() && text[0] == '-';
  if (negative) text.remove_prefix(1);
  size_t dot = text.find('.');
  std::string whole(text.substr(0, dot));
  std::string frac(dot == std::string_view::npos ? "" : text.substr(dot + 1));
  if (frac.find_first_of("eE") != std::string::npos || whole.find_first_of("eE") != std::string::npos) return false;
  frac = (frac + "000").substr(0, 3);
  int64_t w = 0, f = 0;
  if (!absl::SimpleAtoi(whole.empty() ? "0" : whole, &w) || !absl::SimpleAtoi(frac, &f)) return false;
  *ns = (w * 1000 + f) * (negative ? -1 : 1);
  return true;
}

std::string ScalarText(simdjson::ondemand::value v) {
  if (v.type() == simdjson::ondemand::json_type::string) return std::string(std::string_view(v.get_string()));
  std::string_view raw = v.raw_json_token();
  while (!raw.empty() && (raw.back() == ' ' || raw.back() == '\n' || raw.back() == '\r' || raw.back() == '\t'))
    raw.remove_suffix(1);
  return std::string(raw);
}

// docs/analysis.md, Chrome-trace JSON: which complete events are device work, which are left out.
bool IsDeviceCategory(const std::string& cat) {
  return cat == "kernel" || cat == "Kernel" || cat == "gpu_memcpy" || cat == "gpu_memset" || cat == "Memcpy" ||
         cat == "Memset" || cat == "mtia_ccp_events";
}
bool IsExcludedCategory(const std::string& cat) {
  return cat == "Trace" || cat == "gpu_user_annotation" || cat == "cuda_sync";
}

BfTracks KinetoBruteForce(const std::string& path) {
  BfTracks tracks;
  std::string text = analysis::testing::ReadDecompressed(path);
  simdjson::padded_string padded(text);
  simdjson::ondemand::parser parser;
  simdjson::ondemand::document doc = parser.iterate(padded);
  simdjson::ondemand::array events;
  if (doc.type() == simdjson::ondemand::json_type::array) {
    events = doc.get_array();
  } else {
    events = doc["traceEvents"].get_array();
  }
  struct Sample {
    int64_t ts;
    int64_t value;
    bool total;
  };
  std::map<std::string, std::vector<Sample>> memory;
  for (simdjson::ondemand::object e : events) {
    std::string ph, cat, name, pid, tid, device, ts_text, dur_text;
    bool has_cat = false, has_name = false, has_device = false;
    bool has_total = false, has_bytes = false, has_device_id = false;
    int64_t total = 0, bytes = 0, device_id = 0;
    for (auto field : e) {
      std::string_view key = field.unescaped_key();
      simdjson::ondemand::value v = field.value();
      if (key == "ph") {
        ph = ScalarText(v);
      } else if (key == "cat") {
        cat = ScalarText(v), has_cat = true;
      } else if (key == "name") {
        name = ScalarText(v), has_name = true;
      } else if (key == "pid") {
        pid = ScalarText(v);
      } else if (key == "tid") {
        tid = ScalarText(v);
      } else if (key == "ts") {
        ts_text = ScalarText(v);
      } else if (key == "dur") {
        dur_text = ScalarText(v);
      } else if (key == "args" && v.type() == simdjson::ondemand::json_type::object) {
        for (auto arg : v.get_object()) {
          std::string_view k = arg.unescaped_key();
          simdjson::ondemand::value a = arg.value();
          if (k == "device") {
            device = ScalarText(a), has_device = true;
          } else if (k == "Device Id") {
            has_device_id = absl::SimpleAtoi(ScalarText(a), &device_id);
          } else if (k == "Total Allocated") {
            has_total = absl::SimpleAtoi(ScalarText(a), &total);
          } else if (k == "Bytes") {
            has_bytes = absl::SimpleAtoi(ScalarText(a), &bytes);
          }
        }
      }
    }
    int64_t ts = 0, dur = 0;
    if (ph == "X") {
      if (!has_name || !MicrosToNs(ts_text, &ts) || !MicrosToNs(dur_text, &dur) || dur < 0) continue;
      if (has_cat && IsExcludedCategory(cat)) continue;
      std::string id = has_cat && IsDeviceCategory(cat) ? absl::StrCat("device:", has_device ? device : pid, "/", tid)
                                                        : absl::StrCat("host:", pid, "/", tid);
      tracks[id].push_back({name, ts, dur});
    } else if ((ph == "i" || ph == "I") && name == "[memory]" && has_device_id && (has_total || has_bytes) &&
               MicrosToNs(ts_text, &ts)) {
      std::string device_name = device_id < 0 ? "cpu" : absl::StrCat(device_id);
      memory[device_name].push_back({ts, has_total ? total : bytes, has_total});
    }
  }
  // A counter sample lasts until the next one (the last: 0).
  for (auto& [device_name, samples] : memory) {
    std::stable_sort(samples.begin(), samples.end(), [](const Sample& a, const Sample& b) { return a.ts < b.ts; });
    auto& out = tracks["counter:memory/" + device_name];
    for (size_t i = 0; i < samples.size(); ++i) {
      out.push_back({"allocated_bytes", samples[i].ts, i + 1 < samples.size() ? samples[i + 1].ts - samples[i].ts : 0});
    }
  }
  return tracks;
}

BfTracks XSpaceBruteForce(const std::string& path) {
  ::fleetprof::testing::xplane::XSpace space;
  std::string bytes = fleetprof::testing::ReadSmallFile(path);
  EXPECT_TRUE(space.ParseFromString(bytes));
  std::map<std::string, bool> has_stream_line;
  for (const auto& plane : space.planes()) {
    if (!plane.name().starts_with("/device:")) continue;
    for (const auto& line : plane.lines()) has_stream_line[plane.name()] |= line.name().starts_with("Stream #");
  }
  BfTracks tracks;
  for (const auto& plane : space.planes()) {
    if (!plane.name().starts_with("/device:")) continue;
    for (const auto& line : plane.lines()) {
      const bool wanted = has_stream_line[plane.name()] ? line.name().starts_with("Stream #") : line.name() == "XLA Ops";
      if (!wanted) continue;
      auto& out = tracks[absl::StrCat("device:", plane.name(), "/", line.name())];
      for (const auto& e : line.events()) {
        if (e.data_case() != ::fleetprof::testing::xplane::XEvent::kOffsetPs) continue;
        auto md = plane.event_metadata().find(e.metadata_id());
        __int128 start_ps = static_cast<__int128>(line.timestamp_ns()) * 1000 + e.offset_ps();
        __int128 start_ns = start_ps >= 0 ? start_ps / 1000 : -((-start_ps + 999) / 1000);
        out.push_back({md == plane.event_metadata().end() ? "" : md->second.name(), static_cast<int64_t>(start_ns),
                       e.duration_ps() / 1000});
      }
    }
  }
  return tracks;
}

struct Stored {
  MemoryTimelineStore store;
  std::shared_ptr<const Timeline> timeline;
  analysis::TraceSummary summary;
};

std::unique_ptr<Stored> Ingest(const std::string& path) {
  auto stored = std::make_unique<Stored>();
  TimelineSink sink(&stored->store);
  absl::StatusOr<analysis::TraceSummary> summary = analysis::AnalyzeTraceFile(path, &sink);
  EXPECT_TRUE(summary.ok()) << summary.status();
  if (!summary.ok()) return nullptr;
  stored->summary = *std::move(summary);
  auto timeline = Timeline::Load(stored->store);
  EXPECT_TRUE(timeline.ok()) << timeline.status();
  if (!timeline.ok()) return nullptr;
  stored->timeline = *std::move(timeline);
  return stored;
}

// One window checked track by track against the brute force.
void ExpectWindowMatches(Stored& s, const BfTracks& bf, int64_t start, int64_t end, int64_t resolution,
                         const std::string& what) {
  SCOPED_TRACE(what);
  v1::TraceWindowRequest request;
  request.set_start_ns(start);
  request.set_end_ns(end);
  request.set_resolution_ns(resolution);
  request.set_max_events_per_track(kMaxEventsPerTrack);
  absl::StatusOr<v1::TraceWindow> window = QueryTraceWindow(*s.timeline, s.store, request);
  ASSERT_TRUE(window.ok()) << window.status();
  const int64_t ws = window->start_ns(), we = window->end_ns(), r = window->resolution_ns();
  if (resolution != 0) {
    EXPECT_EQ(r, resolution);
  }
  std::map<std::string, const v1::TraceTrack*> got;
  for (const v1::TraceTrack& t : window->tracks()) got[t.id()] = &t;
  for (const auto& [id, events] : bf) {
    SCOPED_TRACE(id);
    ASSERT_TRUE(got.count(id)) << "track missing from the window";
    const v1::TraceTrack& track = *got[id];
    std::vector<BfEvent> exact, folded;
    for (const BfEvent& e : events) {
      if (!Overlaps(e.start, e.dur, ws, we)) continue;
      (e.dur >= r ? exact : folded).push_back(e);
    }
    std::sort(exact.begin(), exact.end());
    std::vector<BfEvent> answer;
    for (const v1::TraceEvent& e : track.events()) answer.push_back({e.name(), e.start_ns(), e.dur_ns()});
    std::sort(answer.begin(), answer.end());
    // (The corpus traces stay under the window-wide cap, kMaxEventsPerWindow.)
    if (static_cast<int64_t>(exact.size()) <= kMaxEventsPerTrack) {
      EXPECT_FALSE(track.truncated());
      EXPECT_EQ(answer, exact);
    } else {
      EXPECT_TRUE(track.truncated());
      EXPECT_EQ(static_cast<int64_t>(answer.size()) + track.omitted_events(), static_cast<int64_t>(exact.size()));
    }
    int64_t merged = 0;
    for (const v1::MergedBlock& m : track.merged()) {
      EXPECT_LE(m.start_ns(), m.end_ns());
      EXPECT_GT(m.count(), 0);
      merged += m.count();
    }
    EXPECT_EQ(merged, static_cast<int64_t>(folded.size()));
    // Every folded event lies in a merged block.
    for (const BfEvent& e : folded) {
      auto it = std::upper_bound(track.merged().begin(), track.merged().end(), e.start,
                                 [](int64_t t, const v1::MergedBlock& m) { return t < m.start_ns(); });
      ASSERT_NE(it, track.merged().begin()) << e;
      --it;
      ASSERT_LE(e.start + e.dur, it->end_ns()) << e;
    }
  }
  for (const auto& [id, track] : got) {
    if (!bf.count(id)) {
      EXPECT_TRUE(track->kind() == "counter") << "track " << id << " is not in the brute force";
    }
  }
}

void ExpectWindowsMatch(const std::string& relative, bool kineto) {
  const std::string path = CorpusPath(relative);
  FLEETPROF_REQUIRE_PATH(path);
  std::unique_ptr<Stored> s = Ingest(path);
  ASSERT_NE(s, nullptr);
  BfTracks bf = kineto ? KinetoBruteForce(path) : XSpaceBruteForce(path);
  ASSERT_FALSE(bf.empty());
  int64_t bf_events = 0;
  for (const auto& [id, events] : bf) bf_events += static_cast<int64_t>(events.size());
  int64_t stored_events = 0;
  for (const auto& t : s->timeline->directory().tracks()) {
    if (bf.count(t.id())) stored_events += t.events();
  }
  EXPECT_EQ(stored_events, bf_events);
  const int64_t start = s->timeline->start_ns(), end = s->timeline->end_ns(), span = end - start;
  ExpectWindowMatches(*s, bf, 0, 0, 0, "whole trace, default resolution");
  ExpectWindowMatches(*s, bf, start, end, 1, "whole trace, every event");
  ExpectWindowMatches(*s, bf, start + span * 4 / 10, start + span / 2, 1000, "a tenth, 1 us");
  ExpectWindowMatches(*s, bf, start + span / 3, start + span / 3 + 1'000'000, 0, "1 ms, default resolution");
  ExpectWindowMatches(*s, bf, start + span / 2, start + span / 2 + 50'000, 7, "50 us, 7 ns");
  ExpectWindowMatches(*s, bf, start - 1'000'000, start + span / 5, 100'000, "before the start, 100 us");
}

TEST(TraceWindow, MatchesBruteForceV100Resnet) { ExpectWindowsMatch("kineto/v100_resnet_rank0.pt.trace.json.gz", true); }
TEST(TraceWindow, MatchesBruteForceLegacySchema) {
  ExpectWindowsMatch("kineto/v100_resnet50_legacy_schema.pt.trace.json.gz", true);
}
TEST(TraceWindow, MatchesBruteForceA100Nccl) { ExpectWindowsMatch("kineto/a100_nccl_rank0.json.gz", true); }
TEST(TraceWindow, MatchesBruteForceA100Alexnet) { ExpectWindowsMatch("kineto/a100_alexnet.json.gz", true); }
TEST(TraceWindow, MatchesBruteForceMi250) { ExpectWindowsMatch("kineto/mi250_rocm62.json.gz", true); }
TEST(TraceWindow, MatchesBruteForceMtia) { ExpectWindowsMatch("kineto/mtia_inference_rank0.json.gz", true); }
TEST(TraceWindow, MatchesBruteForceXSpace) { ExpectWindowsMatch("xspace/tf_8gpu_multi_worker.xplane.pb", false); }

TEST(TraceWindow, TrackOverItsBudgetSaysHowManyWereLeftOut) {
  const std::string path = CorpusPath("kineto/a100_alexnet.json.gz");
  FLEETPROF_REQUIRE_PATH(path);
  std::unique_ptr<Stored> s = Ingest(path);
  ASSERT_NE(s, nullptr);
  v1::TraceWindowRequest request;
  request.set_resolution_ns(1);
  request.set_max_events_per_track(10);
  auto window = QueryTraceWindow(*s->timeline, s->store, request);
  ASSERT_TRUE(window.ok()) << window.status();
  bool some_truncated = false;
  for (const auto& track : window->tracks()) {
    const v1::TimelineTrack* stored = nullptr;
    for (const auto& t : s->timeline->directory().tracks()) {
      if (t.id() == track.id()) stored = &t;
    }
    ASSERT_NE(stored, nullptr);
    int64_t merged = 0;
    for (const auto& m : track.merged()) merged += m.count();
    EXPECT_LE(track.events_size(), 10);
    EXPECT_EQ(track.events_size() + track.omitted_events() + merged, stored->events()) << track.id();
    some_truncated |= track.truncated();
  }
  EXPECT_TRUE(some_truncated);
}

TEST(TraceWindow, FiltersAndRejectsBadRequests) {
  const std::string path = CorpusPath("kineto/v100_resnet_rank0.pt.trace.json.gz");
  FLEETPROF_REQUIRE_PATH(path);
  std::unique_ptr<Stored> s = Ingest(path);
  ASSERT_NE(s, nullptr);
  v1::TraceWindowRequest request;
  request.set_search("GEMM");
  request.set_resolution_ns(1);
  request.set_args(true);
  auto window = QueryTraceWindow(*s->timeline, s->store, request);
  ASSERT_TRUE(window.ok()) << window.status();
  int64_t matched = 0;
  for (const auto& track : window->tracks()) {
    for (const auto& e : track.events()) {
      EXPECT_NE(absl::AsciiStrToLower(e.name()).find("gemm"), std::string::npos) << e.name();
      EXPECT_TRUE(e.has_args());
      EXPECT_EQ(e.args().track(), track.id());
      ++matched;
    }
  }
  EXPECT_GT(matched, 0);
  // A kernel's correlation finds its launch on the host.
  int64_t correlation = -1;
  for (const auto& track : window->tracks()) {
    if (track.kind() == "device" && !track.events().empty() && track.events(0).has_correlation()) {
      correlation = track.events(0).correlation();
    }
  }
  ASSERT_GE(correlation, 0);
  v1::TraceWindowRequest flow;
  flow.set_correlation(correlation);
  auto linked = QueryTraceWindow(*s->timeline, s->store, flow);
  ASSERT_TRUE(linked.ok()) << linked.status();
  int64_t host = 0, device = 0;
  for (const auto& track : linked->tracks()) {
    int64_t n = track.events_size();
    for (const auto& m : track.merged()) n += m.count();
    (track.kind() == "host" ? host : device) += n;
  }
  EXPECT_GE(host, 1);
  EXPECT_GE(device, 1);

  v1::TraceWindowRequest bad;
  bad.set_start_ns(10);
  bad.set_end_ns(5);
  EXPECT_TRUE(absl::IsInvalidArgument(QueryTraceWindow(*s->timeline, s->store, bad).status()));
  bad = v1::TraceWindowRequest();
  bad.add_tracks("device:nope/0");
  EXPECT_TRUE(absl::IsInvalidArgument(QueryTraceWindow(*s->timeline, s->store, bad).status()));
  bad = v1::TraceWindowRequest();
  bad.set_resolution_ns(-1);
  EXPECT_TRUE(absl::IsInvalidArgument(QueryTraceWindow(*s->timeline, s->store, bad).status()));
}

TEST(TraceWindow, AllTracksTogetherStayUnderTheWindowCap) {
  constexpr int kThreads = 6;
  constexpr int kPerThread = 100000;
  analysis::TraceEvents in;
  const analysis::NameId name = in.names.Intern("op");
  const analysis::NameId category = in.names.Intern("cpu_op");
  for (int t = 0; t < kThreads; ++t) {
    const analysis::NameId thread = in.names.Intern(absl::StrCat("1\x1f", t));
    for (int i = 0; i < kPerThread; ++i) {
      analysis::HostEvent e;
      e.start = int64_t{i} * 20;
      e.dur = 10;
      e.name = name;
      e.thread = thread;
      e.category = category;
      in.host.push_back(e);
    }
  }
  MemoryTimelineStore store;
  TimelineSink sink(&store);
  ASSERT_TRUE(sink.Consume(in).ok());
  auto timeline = Timeline::Load(store);
  ASSERT_TRUE(timeline.ok()) << timeline.status();
  v1::TraceWindowRequest request;
  request.set_resolution_ns(1);
  request.set_max_events_per_track(kMaxEventsPerTrack);
  auto window = QueryTraceWindow(**timeline, store, request);
  ASSERT_TRUE(window.ok()) << window.status();
  int64_t kept = 0, omitted = 0;
  for (const auto& track : window->tracks()) {
    kept += track.events_size();
    omitted += track.omitted_events();
    EXPECT_EQ(track.truncated(), track.omitted_events() > 0);
  }
  EXPECT_EQ(kept, kMaxEventsPerWindow);
  EXPECT_EQ(kept + omitted, int64_t{kThreads} * kPerThread);
}

TEST(TraceWindow, ATraceWithoutEventsHasAnEmptyWindow) {
  MemoryTimelineStore store;
  TimelineSink sink(&store);
  analysis::TraceEvents none;
  ASSERT_TRUE(sink.Consume(none).ok());
  auto timeline = Timeline::Load(store);
  ASSERT_TRUE(timeline.ok()) << timeline.status();
  auto window = QueryTraceWindow(**timeline, store, v1::TraceWindowRequest());
  ASSERT_TRUE(window.ok()) << window.status();
  EXPECT_EQ(window->tracks_size(), 0);
  v1::TraceWindowRequest explicit_window;
  explicit_window.set_start_ns(1);
  explicit_window.set_end_ns(1000);
  window = QueryTraceWindow(**timeline, store, explicit_window);
  ASSERT_TRUE(window.ok()) << window.status();
  EXPECT_EQ(window->tracks_size(), 0);
}

// ---- export ----

std::string ExportText(Stored& s, int64_t start, int64_t end) {
  // The exporter owns a reader: a thin forwarder onto the test's store.
  struct Forward : TimelineReader {
    explicit Forward(MemoryTimelineStore* s) : s(s) {}
    absl::StatusOr<std::string> GetBlock(uint32_t t, uint32_t l, uint32_t b) override { return s->GetBlock(t, l, b); }
    absl::StatusOr<std::string> GetNames(uint32_t c) override { return s->GetNames(c); }
    absl::StatusOr<std::string> GetDirectory() override { return s->GetDirectory(); }
    MemoryTimelineStore* s;
  };
  auto source = ExportChromeTrace(s.timeline, std::make_unique<Forward>(&s.store), start, end, "export");
  EXPECT_TRUE(source.ok()) << source.status();
  if (!source.ok()) return "";
  std::string out;
  char buf[65536];
  while (true) {
    auto n = (*source)->Read(buf, sizeof(buf));
    EXPECT_TRUE(n.ok()) << n.status();
    if (!n.ok() || *n == 0) break;
    out.append(buf, *n);
  }
  return out;
}

void ExpectRoundTrip(const std::string& relative) {
  const std::string path = CorpusPath(relative);
  FLEETPROF_REQUIRE_PATH(path);
  std::unique_ptr<Stored> s = Ingest(path);
  ASSERT_NE(s, nullptr);
  const std::string text = ExportText(*s, 0, 0);
  simdjson::dom::parser parser;
  simdjson::dom::element parsed;
  ASSERT_EQ(parser.parse(text).get(parsed), simdjson::SUCCESS) << "the export is not JSON";
  auto again = analysis::testing::AnalyzeJson(text, 1 << 16);
  ASSERT_TRUE(again.ok()) << again.status();
  v1::ProfileSummary original = SummaryToProto(s->summary);
  v1::ProfileSummary exported = SummaryToProto(*again);
  for (auto* summary : {&original, &exported}) {
    v1::ProfileSummary kept;
    *kept.mutable_devices() = summary->devices();
    *kept.mutable_kernels() = summary->kernels();
    *kept.mutable_ops() = summary->ops();
    *summary = kept;
  }
  EXPECT_EQ(ProtoToJson(exported), ProtoToJson(original));
  EXPECT_GT(original.kernels_size(), 0);
}

TEST(ChromeTraceExport, RoundTripV100Resnet) { ExpectRoundTrip("kineto/v100_resnet_rank0.pt.trace.json.gz"); }
TEST(ChromeTraceExport, RoundTripLegacySchema) { ExpectRoundTrip("kineto/v100_resnet50_legacy_schema.pt.trace.json.gz"); }
TEST(ChromeTraceExport, RoundTripA100Nccl) { ExpectRoundTrip("kineto/a100_nccl_rank0.json.gz"); }
TEST(ChromeTraceExport, RoundTripA100Alexnet) { ExpectRoundTrip("kineto/a100_alexnet.json.gz"); }
TEST(ChromeTraceExport, RoundTripMi250) { ExpectRoundTrip("kineto/mi250_rocm62.json.gz"); }
TEST(ChromeTraceExport, RoundTripMtia) { ExpectRoundTrip("kineto/mtia_inference_rank0.json.gz"); }
// XSpace sums picoseconds and the export carries ns: exact here, where no device event's
// times have a sub-ns part; in general a device total could differ by under 1 ns per event.
TEST(ChromeTraceExport, RoundTripXSpace) { ExpectRoundTrip("xspace/tf_8gpu_multi_worker.xplane.pb"); }

TEST(ChromeTraceExport, WindowHoldsExactlyTheEventsThatOverlapIt) {
  const std::string relative = "kineto/a100_nccl_rank0.json.gz";
  const std::string path = CorpusPath(relative);
  FLEETPROF_REQUIRE_PATH(path);
  std::unique_ptr<Stored> s = Ingest(path);
  ASSERT_NE(s, nullptr);
  BfTracks bf = KinetoBruteForce(path);
  const int64_t start = s->timeline->start_ns() + (s->timeline->end_ns() - s->timeline->start_ns()) / 3;
  const int64_t end = start + 2'000'000;
  int64_t expected = 0;
  for (const auto& [id, events] : bf) {
    for (const BfEvent& e : events) {
      if (id.rfind("counter:", 0) == 0 ? (e.start >= start && e.start < end) || Overlaps(e.start, e.dur, start, end)
                                       : Overlaps(e.start, e.dur, start, end)) {
        ++expected;
      }
    }
  }
  const std::string text = ExportText(*s, start, end);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(text).get(doc), simdjson::SUCCESS);
  int64_t events = 0;
  for (simdjson::dom::element e : doc["traceEvents"].get_array()) {
    std::string_view ph = e["ph"].get_string();
    if (ph != "M") ++events;
  }
  EXPECT_EQ(events, expected);
  EXPECT_GT(events, 0);
}

}  // namespace
}  // namespace fleetprof::timeline
