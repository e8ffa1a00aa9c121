#include "server/fleet/cluster_view.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace fleetprof {

void AddClusterOperations(Membership* membership, StorageEngine* engine, Operations* ops) {
  ops->AddUnary<v1::GetClusterRequest, v1::GetClusterResponse>(
      "fleetprof.v1.ClusterService.GetCluster",
      [membership, engine](const v1::GetClusterRequest&) -> absl::StatusOr<v1::GetClusterResponse> {
        v1::GetClusterResponse response;
        engine->DescribeStores(&response);
        // The replicas are known only to the catalog: without it the answer would be an empty
        // list that reads as "no replicas". UNAVAILABLE instead, with what is still known.
        auto replicas = membership->Replicas();
        if (!replicas.ok()) {
          const auto state = [](const v1::StoreState& s) {
            return absl::StrCat(s.kind(), " ", s.url(), s.healthy() ? " answers" : " does not answer");
          };
          return absl::UnavailableError(absl::StrCat("cannot list the replicas: ", replicas.status().message(),
                                                     " (catalog: ", state(response.catalog()),
                                                     "; object store: ", state(response.object_store()), ")"));
        }
        std::sort(replicas->begin(), replicas->end(),
                  [](const auto& a, const auto& b) { return a.replica_id() < b.replica_id(); });
        for (auto& r : *replicas) *response.add_replicas() = std::move(r);
        return response;
      });
}

}  // namespace fleetprof
