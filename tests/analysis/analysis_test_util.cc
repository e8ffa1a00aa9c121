#include "tests/analysis/analysis_test_util.h"

#include <zlib.h>

#include "analysis/byte_source.h"
#include "analysis/trace_analyzer.h"
#include "gtest/gtest.h"

namespace fleetprof::analysis::testing {

absl::StatusOr<TraceSummary> AnalyzeJson(const std::string& text, size_t chunk) {
  std::unique_ptr<ByteSource> source = OpenStringSource("test.json", text, chunk);
  return AnalyzeTrace(*source, TraceFormat::kKinetoJson);
}

absl::StatusOr<TraceSummary> AnalyzeXSpace(const std::string& bytes, size_t chunk) {
  std::unique_ptr<ByteSource> source = OpenStringSource("test.xplane.pb", bytes, chunk);
  return AnalyzeTrace(*source, TraceFormat::kXSpace);
}

std::string ReadDecompressed(const std::string& path) {
  absl::StatusOr<std::unique_ptr<ByteSource>> file = OpenFileSource(path);
  EXPECT_TRUE(file.ok()) << file.status();
  if (!file.ok()) return "";
  std::unique_ptr<ByteSource> source = MaybeGunzip(*std::move(file));
  std::string out;
  char buf[1 << 16];
  for (;;) {
    absl::StatusOr<size_t> got = source->Read(buf, sizeof(buf));
    EXPECT_TRUE(got.ok()) << got.status();
    if (!got.ok() || *got == 0) break;
    out.append(buf, *got);
  }
  return out;
}

const OpSummary* FindOp(const TraceSummary& summary, const std::string& name) {
  for (const OpSummary& op : summary.ops) {
    if (op.name == name) return &op;
  }
  return nullptr;
}

const KernelSummary* FindKernel(const TraceSummary& summary, const std::string& name) {
  for (const KernelSummary& kernel : summary.kernels) {
    if (kernel.name == name) return &kernel;
  }
  return nullptr;
}

const DeviceSummary* FindDevice(const TraceSummary& summary, const std::string& device) {
  for (const DeviceSummary& d : summary.devices) {
    if (d.device == device) return &d;
  }
  return nullptr;
}

std::string Gzip(const std::string& data) {
  z_stream z{};
  // 15 + 16: a gzip wrapper rather than zlib's.
  EXPECT_EQ(deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY),
            Z_OK);
  std::string out(deflateBound(&z, data.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string TraceWithEvents(const std::string& events) {
  return "{\"schemaVersion\": 1, \"traceEvents\": [" + events + "]}";
}

}  // namespace fleetprof::analysis::testing
