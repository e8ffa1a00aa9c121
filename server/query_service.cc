#include "server/query_service.h"

#include <chrono>

#include "server/grpc_status.h"

namespace fleetprof {
namespace {

// Times one RPC into the query histogram.
class QueryTimer {
 public:
  QueryTimer(ServerMetrics* metrics, const char* rpc)
      : metrics_(metrics), rpc_(rpc), start_(std::chrono::steady_clock::now()) {}
  ~QueryTimer() {
    metrics_->RecordQuery(
        rpc_, std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
  }

 private:
  ServerMetrics* metrics_;
  const char* rpc_;
  std::chrono::steady_clock::time_point start_;
};

// Copies at most `limit` rows (0 = all).
template <typename Rows, typename Out>
void CopyRows(const Rows& rows, int limit, Out* out) {
  int n = 0;
  for (const auto& row : rows) {
    if (limit > 0 && n++ >= limit) break;
    *out->Add() = row;
  }
}

}  // namespace

grpc::Status QueryServiceImpl::ListProfiles(grpc::ServerContext*,
                                            const v1::ListProfilesRequest* request,
                                            v1::ListProfilesResponse* response) {
  QueryTimer timer(metrics_, "ListProfiles");
  auto page = store_->ListProfiles(*request);
  if (!page.ok()) return ToGrpcStatus(page.status());
  for (auto& info : page->profiles) *response->add_profiles() = std::move(info);
  response->set_next_page_token(page->next_page_token);
  return grpc::Status::OK;
}

grpc::Status QueryServiceImpl::GetProfile(grpc::ServerContext*,
                                          const v1::GetProfileRequest* request,
                                          v1::GetProfileResponse* response) {
  QueryTimer timer(metrics_, "GetProfile");
  auto info = store_->GetProfile(request->profile_id());
  if (!info.ok()) return ToGrpcStatus(info.status());
  auto summary = store_->GetSummary(request->profile_id());
  if (!summary.ok()) return ToGrpcStatus(summary.status());
  *response->mutable_profile() = *std::move(info);
  *response->mutable_summary() = *std::move(summary);
  return grpc::Status::OK;
}

grpc::Status QueryServiceImpl::OpBreakdown(grpc::ServerContext*,
                                           const v1::BreakdownRequest* request,
                                           v1::OpBreakdownResponse* response) {
  QueryTimer timer(metrics_, "OpBreakdown");
  auto summary = store_->GetSummary(request->profile_id());
  if (!summary.ok()) return ToGrpcStatus(summary.status());
  CopyRows(summary->ops(), request->limit(), response->mutable_ops());
  return grpc::Status::OK;
}

grpc::Status QueryServiceImpl::KernelBreakdown(grpc::ServerContext*,
                                               const v1::BreakdownRequest* request,
                                               v1::KernelBreakdownResponse* response) {
  QueryTimer timer(metrics_, "KernelBreakdown");
  auto summary = store_->GetSummary(request->profile_id());
  if (!summary.ok()) return ToGrpcStatus(summary.status());
  CopyRows(summary->kernels(), request->limit(), response->mutable_kernels());
  return grpc::Status::OK;
}

grpc::Status QueryServiceImpl::TemporalBreakdown(grpc::ServerContext*,
                                                 const v1::BreakdownRequest* request,
                                                 v1::TemporalBreakdownResponse* response) {
  QueryTimer timer(metrics_, "TemporalBreakdown");
  auto summary = store_->GetSummary(request->profile_id());
  if (!summary.ok()) return ToGrpcStatus(summary.status());
  CopyRows(summary->devices(), request->limit(), response->mutable_devices());
  return grpc::Status::OK;
}

}  // namespace fleetprof
