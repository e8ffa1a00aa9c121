#pragma once
// Who serves the cluster and who leads it. Replicas register under a lease in the catalog's
// store and one of them holds the leader key (etcd election; storage/cluster/etcd_membership.h);
// the leader alone runs the cluster-wide chores (schedules, retention, garbage collection). An
// embedded server is a cluster of one that always leads (LocalMembership).

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "fleetprof/v1/cluster.pb.h"

namespace fleetprof {

class Membership {
 public:
  virtual ~Membership() = default;
  // Registers this replica (its lease renewed from here on) and starts running for leader.
  virtual absl::Status Join(const v1::ReplicaInfo& self) = 0;
  // Withdraws: the registration and, if held, the leadership end now, not at the lease's expiry.
  virtual void Leave() = 0;
  // Whether this replica leads now. False as soon as its lease may have expired (a replica cut
  // from etcd stops leading before another can start).
  virtual bool IsLeader() const = 0;
  // The agent streams this replica holds, published with its registration.
  virtual void SetAgents(int64_t agents) = 0;
  // Every registered replica, the leader marked.
  virtual absl::StatusOr<std::vector<v1::ReplicaInfo>> Replicas() = 0;
  // The same without the leader marked, read from whichever member answers (no quorum
  // needed, so at once during an outage): for who lives and their published clocks.
  virtual absl::StatusOr<std::vector<v1::ReplicaInfo>> LiveReplicas() { return Replicas(); }
  // How far the cluster's clock is from this replica's: the median of every replica's
  // published clock against this one's, 0 within kTrustedClockSkewNs (or with no majority to
  // tell). The leader adds it to its own time before it ages anything (retention), so a
  // leader whose clock is 300 s ahead does not delete 300 s early.
  virtual int64_t ClockOffsetNs() { return 0; }
  static constexpr int64_t kTrustedClockSkewNs = int64_t{10} * 1'000'000'000;
};

// The median of `offsets` (each replica's clock minus this one's, this one's 0 included); with
// an even count the middle one nearer 0 (two replicas cannot tell which is off); 0 when it lies
// within Membership::kTrustedClockSkewNs.
int64_t MedianClockOffset(std::vector<int64_t> offsets);

// A cluster of one: this process, always the leader.
class LocalMembership : public Membership {
 public:
  absl::Status Join(const v1::ReplicaInfo& self) override {
    self_ = self;
    self_.set_leader(true);
    return absl::OkStatus();
  }
  void Leave() override {}
  bool IsLeader() const override { return true; }
  void SetAgents(int64_t agents) override { agents_.store(agents); }
  absl::StatusOr<std::vector<v1::ReplicaInfo>> Replicas() override {
    v1::ReplicaInfo self = self_;
    self.set_agents(agents_.load());
    return std::vector<v1::ReplicaInfo>{self};
  }

 private:
  v1::ReplicaInfo self_;  // written once at Join, before any reader
  std::atomic<int64_t> agents_{0};
};

}  // namespace fleetprof
