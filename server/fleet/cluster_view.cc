#include "server/fleet/cluster_view.h"

#include <algorithm>

namespace fleetprof {

void AddClusterOperations(Membership* membership, StorageEngine* engine, Operations* ops) {
  ops->AddUnary<v1::GetClusterRequest, v1::GetClusterResponse>(
      "fleetprof.v1.ClusterService.GetCluster",
      [membership, engine](const v1::GetClusterRequest&) -> absl::StatusOr<v1::GetClusterResponse> {
        v1::GetClusterResponse response;
        engine->DescribeStores(&response);
        // Without the catalog the replicas cannot be listed; the stores' health still answers.
        if (auto replicas = membership->Replicas(); replicas.ok()) {
          std::sort(replicas->begin(), replicas->end(),
                    [](const auto& a, const auto& b) { return a.replica_id() < b.replica_id(); });
          for (auto& r : *replicas) *response.add_replicas() = std::move(r);
        }
        return response;
      });
}

}  // namespace fleetprof
