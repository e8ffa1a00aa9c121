// QueryApi's flame graphs: call trees from the stored summaries (built anew for profiles stored
// before trees existed), rendered by flame/.
#include "absl/strings/str_cat.h"
#include "analysis/trace_analyzer.h"
#include "flame/call_tree_sum.h"
#include "flame/flame_graph.h"
#include "proto/call_tree_codec.h"
#include "server/query/query_api.h"
#include "server/query/query_timer.h"

namespace fleetprof {

absl::StatusOr<analysis::CallTree> QueryApi::CallTreeOf(const std::string& profile_id) {
  auto summary = summaries_.Get(profile_id);
  if (!summary.ok()) return summary.status();
  absl::StatusOr<analysis::CallTree> tree = CallTreeFromProto(**summary);
  if (!absl::IsNotFound(tree.status())) return tree;
  // Stored before call trees existed: the original upload holds everything the tree needs.
  ConcurrencySlots::Held slot(&tree_builds_, kDiagnosisWait);
  if (!slot.ok()) {
    return absl::UnavailableError(absl::StrCat("profile ", profile_id,
                                               " needs its call tree built and the server is building others; retry"));
  }
  auto info = store_->profiles().Get(profile_id);
  if (!info.ok()) return info.status();
  auto analysed = analysis::AnalyzeTraceStream(store_->uploads().ReadOriginal(info->upload_id(), info->size_bytes()),
                                               analysis::TraceFormatFromName(info->format()));
  if (!analysed.ok()) {
    return absl::FailedPreconditionError(absl::StrCat("profile ", profile_id,
                                                      " was stored before call trees existed and its original "
                                                      "upload cannot be analysed again to build one (",
                                                      analysed.status().message(), "); upload its file again"));
  }
  v1::ProfileSummary with_tree = **summary;
  CallTreeToProto(analysed->call_tree, &with_tree);
  summaries_.Insert(profile_id, with_tree);
  return CallTreeFromProto(with_tree);
}

absl::StatusOr<v1::FlameGraph> QueryApi::FlameGraph(const v1::FlameGraphRequest& request) {
  QueryTimer timer(metrics_, "FlameGraph");
  auto value = flame::ParseFlameValue(request.value());
  if (!value.ok()) return value.status();
  const bool job = !request.job().empty();
  if (job == !request.profile_id().empty()) {
    return absl::InvalidArgumentError("a flame graph takes a profile_id or a job, not both or neither");
  }
  if (!job) {
    auto tree = CallTreeOf(request.profile_id());
    if (!tree.ok()) return tree.status();
    return flame::RenderFlameGraph(*tree, *value);
  }
  v1::JobRequest job_request;
  job_request.set_job(request.job());
  *job_request.mutable_labels() = request.labels();
  job_request.set_since_ns(request.since_ns());
  job_request.set_until_ns(request.until_ns());
  std::vector<std::string> ids;
  absl::Status s = ForEachJobProfile(job_request, [&](const v1::ProfileInfo& info) {
    ids.push_back(info.profile_id());
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  auto sum = SumCallTrees(absl::StrCat("job ", JobRollups::Key(job_request)), ids);
  if (!sum.ok()) return sum.status();
  return flame::RenderFlameGraph(*sum, *value);
}

absl::StatusOr<analysis::CallTree> QueryApi::SumCallTrees(const std::string& key,
                                                          const std::vector<std::string>& profile_ids) {
  return tree_rollups_.Sum(key, profile_ids, [this](const std::string& id, flame::CallTreeSum* sum) {
    auto tree = CallTreeOf(id);
    if (!tree.ok()) return tree.status();
    sum->Add(*tree);
    return absl::OkStatus();
  });
}

}  // namespace fleetprof
