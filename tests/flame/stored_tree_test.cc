// Call trees through the query layer on an in-memory store: a profile stored before call trees
// existed gets one built from its original upload, or a clear error when that is gone; the
// profile answer leaves the tree out.

#include <string>

#include "analysis/trace_analyzer.h"
#include "gtest/gtest.h"
#include "proto/summary_codec.h"
#include "server/query/query_api.h"
#include "server/server_metrics.h"
#include "storage/storage.h"
#include "tests/analysis/analysis_test_util.h"
#include "tests/test_support.h"

namespace fleetprof {
namespace {

using ::fleetprof::testing::CorpusPath;

class StoredTreeTest : public ::testing::Test {
 protected:
  void SetUp() override { store_ = Storage::InMemory(); }

  // Stores `raw` as profile `id`'s upload (none when empty) with `summary`.
  void Store(const std::string& id, const std::string& raw, const v1::ProfileSummary& summary) {
    v1::ProfileInfo info;
    info.set_profile_id(id);
    info.set_job("old");
    info.set_format(summary.format());
    if (!raw.empty()) {
      const std::string upload = "upload-" + id;
      v1::UploadRecord record;
      ASSERT_TRUE(store_->uploads().Put(upload, record).ok());
      ASSERT_TRUE(store_->uploads().AppendRaw(upload, record, raw, static_cast<int64_t>(raw.size())).ok());
      ASSERT_TRUE(store_->uploads().Put(upload, record).ok());
      info.set_upload_id(upload);
      info.set_size_bytes(static_cast<int64_t>(raw.size()));
    }
    absl::Status s = store_->profiles().Commit(info, summary);
    ASSERT_TRUE(s.ok()) << s;
  }

  std::unique_ptr<Storage> store_;
  ServerMetrics metrics_;
};

TEST_F(StoredTreeTest, ProfileStoredBeforeCallTreesGetsOneBuiltFromItsOriginalUpload) {
  const std::string path = CorpusPath("kineto/a100_alexnet.json.gz");
  FLEETPROF_REQUIRE_PATH(path);
  auto analysed = analysis::AnalyzeTraceFile(path);
  ASSERT_TRUE(analysed.ok()) << analysed.status();
  v1::ProfileSummary old = SummaryToProto(*analysed);
  old.clear_call_tree();
  Store("p1", ::fleetprof::testing::ReadSmallFile(path), old);
  QueryApi api(store_.get(), &metrics_);
  v1::FlameGraphRequest request;
  request.set_profile_id("p1");
  absl::StatusOr<v1::FlameGraph> graph = api.FlameGraph(request);
  ASSERT_TRUE(graph.ok()) << graph.status();
  int64_t device = 0;
  for (const analysis::KernelSummary& k : analysed->kernels) device += k.total_ns;
  EXPECT_EQ(graph->total(), device);
  // Kept for the next query; the profile answer still has no tree in it.
  EXPECT_TRUE(api.FlameGraph(request).ok());
  auto profile = api.GetProfile("p1");
  ASSERT_TRUE(profile.ok());
  EXPECT_FALSE(profile->summary().has_call_tree());
}

TEST_F(StoredTreeTest, ProfileWithoutTreeOrReadableOriginalIsAClearError) {
  auto analysed = analysis::testing::AnalyzeJson(
      R"({"traceEvents":[{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":1,"dur":2}]})");
  ASSERT_TRUE(analysed.ok());
  v1::ProfileSummary old = SummaryToProto(*analysed);
  old.clear_call_tree();
  Store("p2", "", old);
  QueryApi api(store_.get(), &metrics_);
  v1::FlameGraphRequest request;
  request.set_profile_id("p2");
  absl::StatusOr<v1::FlameGraph> graph = api.FlameGraph(request);
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().code(), absl::StatusCode::kFailedPrecondition) << graph.status();
  EXPECT_NE(graph.status().message().find("stored before call trees existed"), std::string::npos) << graph.status();
  v1::ExportProfileRequest pprof;
  pprof.set_profile_id("p2");
  pprof.set_format("pprof");
  EXPECT_EQ(api.ExportProfile(pprof).status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace fleetprof
