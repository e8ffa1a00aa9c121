#pragma once
// What two ways of reading one Chrome trace must agree on (the two-thread split, the fast lane):
// the status, and on success every event, name id, count and metadata entry.

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "analysis/byte_source.h"
#include "analysis/trace_events.h"
#include "gtest/gtest.h"

namespace fleetprof::analysis::testing_events {

// The Kineto traces of the corpus (../shared/corpus/kineto), as the reader tests go through them.
inline constexpr const char* kKinetoCorpusFiles[] = {
    "a100_alexnet.json.gz", "a100_nccl_rank0.json.gz", "mi250_rocm62.json.gz", "mtia_inference_rank0.json.gz",
    "v100_resnet50_legacy_schema.pt.trace.json.gz", "v100_resnet_rank0.pt.trace.json.gz"};

struct Read {
  absl::Status status;
  TraceEvents events;
};

inline void ExpectSame(const Read& one, const Read& two) {
  ASSERT_EQ(one.status, two.status);
  if (!one.status.ok()) return;
  const TraceEvents& a = one.events;
  const TraceEvents& b = two.events;
  EXPECT_EQ(a.events, b.events);
  EXPECT_EQ(a.skipped_events, b.skipped_events);
  EXPECT_EQ(a.unknown_category_events, b.unknown_category_events);
  EXPECT_EQ(a.metadata, b.metadata);
  ASSERT_EQ(a.names.size(), b.names.size());
  for (NameId i = 0; i < a.names.size(); ++i) ASSERT_EQ(a.names.Get(i), b.names.Get(i)) << i;
  ASSERT_EQ(a.activity.size(), b.activity.size());
  for (size_t i = 0; i < a.activity.size(); ++i) {
    const DeviceActivity& x = a.activity[i];
    const DeviceActivity& y = b.activity[i];
    ASSERT_TRUE(x.start == y.start && x.dur == y.dur && x.correlation == y.correlation && x.name == y.name &&
                x.device == y.device && x.stream == y.stream && x.category == y.category && x.kind == y.kind &&
                x.has_correlation == y.has_correlation)
        << "activity " << i;
  }
  ASSERT_EQ(a.host.size(), b.host.size());
  for (size_t i = 0; i < a.host.size(); ++i) {
    const HostEvent& x = a.host[i];
    const HostEvent& y = b.host[i];
    ASSERT_TRUE(x.start == y.start && x.dur == y.dur && x.correlation == y.correlation && x.name == y.name &&
                x.thread == y.thread && x.category == y.category && x.is_runtime == y.is_runtime &&
                x.has_correlation == y.has_correlation)
        << "host " << i;
  }
  ASSERT_EQ(a.memory.size(), b.memory.size());
  for (size_t i = 0; i < a.memory.size(); ++i) {
    EXPECT_TRUE(a.memory[i].ts == b.memory[i].ts && a.memory[i].bytes == b.memory[i].bytes &&
                a.memory[i].device == b.memory[i].device && a.memory[i].is_total == b.memory[i].is_total);
  }
  EXPECT_EQ(a.copy_bytes, b.copy_bytes);
  EXPECT_EQ(a.message_bytes, b.message_bytes);
}

// The bytes of a file, gunzipped when it is gzip.
inline std::string Gunzipped(const std::string& path) {
  std::unique_ptr<ByteSource> source = MaybeGunzip(*OpenFileSource(path));
  std::string text;
  char buf[1 << 16];
  for (;;) {
    absl::StatusOr<size_t> got = source->Read(buf, sizeof(buf));
    if (!got.ok() || *got == 0) break;
    text.append(buf, *got);
  }
  return text;
}

}  // namespace fleetprof::analysis::testing_events
