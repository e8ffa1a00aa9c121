#pragma once
// Membership and leader election on etcd. Each replica keeps a lease (TTL kLeaseSeconds),
// renewed every third of it, and under it the keys
//   <prefix>replicas/<replica_id>   ReplicaInfo (republished at every renewal, with its clock)
//   <prefix>leader                  replica_id of the leader (created only if absent: an election)
// A replica that cannot renew for longer than the TTL considers its lease gone and stops leading
// at once, before etcd lets another replica take the key; then it registers again under a new lease.

#include <memory>
#include <string>

#include "common/clock.h"
#include "storage/cluster/etcd_client.h"
#include "storage/membership.h"

namespace fleetprof::cluster {

constexpr int64_t kLeaseSeconds = 10;

// `etcd` outlives the membership; `clock` (null: RealClock()) is the wall clock it publishes.
std::unique_ptr<Membership> NewEtcdMembership(EtcdClient* etcd, std::string prefix, const Clock* clock = nullptr);

}  // namespace fleetprof::cluster
