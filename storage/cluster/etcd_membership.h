#pragma once
// Membership and leader election on etcd. Each replica keeps a lease (TTL kLeaseSeconds),
// renewed every third of it, and under it the keys
//   <prefix>replicas/<replica_id>   ReplicaInfo
//   <prefix>leader                  replica_id of the leader (created only if absent: an election)
// A replica that cannot renew for longer than the TTL considers its lease gone and stops leading
// at once, before etcd lets another replica take the key; then it registers again under a new lease.

#include <memory>
#include <string>

#include "storage/cluster/etcd_client.h"
#include "storage/membership.h"

namespace fleetprof::cluster {

constexpr int64_t kLeaseSeconds = 10;

// `etcd` outlives the membership.
std::unique_ptr<Membership> NewEtcdMembership(EtcdClient* etcd, std::string prefix);

}  // namespace fleetprof::cluster
