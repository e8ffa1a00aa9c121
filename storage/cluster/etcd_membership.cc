#include "storage/cluster/etcd_membership.h"

#include <vector>

#include <atomic>
#include <chrono>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "spdlog/spdlog.h"
#include "storage/cluster/etcd_catalog.h"

namespace fleetprof::cluster {
namespace {

constexpr int64_t kSecondNs = 1'000'000'000;

class EtcdMembership : public Membership {
 public:
  EtcdMembership(EtcdClient* etcd, std::string prefix, const fleetprof::Clock* clock)
      : etcd_(etcd), prefix_(std::move(prefix)), clock_(clock) {}
  ~EtcdMembership() override { Leave(); }

  absl::Status Join(const v1::ReplicaInfo& self) override {
    {
      absl::MutexLock lock(&mu_);
      self_ = self;
      self_.set_leader(false);
    }
    if (absl::Status s = Register(); !s.ok()) return s;
    Campaign();
    thread_ = std::thread([this] { Loop(); });
    return absl::OkStatus();
  }

  void Leave() override {
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
      stopping_ = true;
    }
    if (thread_.joinable()) thread_.join();
    leader_ = false;
    // Revoking the lease deletes every key under it: the registration and the leader key.
    if (const int64_t lease = lease_.load(); lease != 0) (void)etcd_->LeaseRevoke(lease);
  }

  bool IsLeader() const override { return leader_.load() && clock_->MonotonicNanos() < lease_valid_until_ns_.load(); }

  void SetAgents(int64_t agents) override { agents_.store(agents); }

  int64_t ClockOffsetNs() override {
    auto replicas = LiveReplicas();
    if (!replicas.ok()) return 0;
    // Each record is up to one publishing interval old, so the others look up to that much
    // behind: far inside kTrustedClockSkewNs.
    const int64_t now = clock_->Now();
    std::string self;
    {
      absl::MutexLock lock(&mu_);
      self = self_.replica_id();
    }
    std::vector<int64_t> offsets{0};
    for (const auto& replica : *replicas) {
      if (replica.replica_id() != self && replica.clock_unix_ns() > 0) offsets.push_back(replica.clock_unix_ns() - now);
    }
    return MedianClockOffset(std::move(offsets));
  }

  absl::StatusOr<std::vector<v1::ReplicaInfo>> Replicas() override {
    auto replicas = Registered(/*serializable=*/false);
    if (!replicas.ok()) return replicas.status();
    const std::string leader = LeaderId();
    for (auto& info : *replicas) info.set_leader(!leader.empty() && info.replica_id() == leader);
    return replicas;
  }

  absl::StatusOr<std::vector<v1::ReplicaInfo>> LiveReplicas() override { return Registered(/*serializable=*/true); }

 private:
  std::string ReplicaKey() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return absl::StrCat(prefix_, "replicas/", self_.replica_id());
  }
  std::string LeaderKey() const { return absl::StrCat(prefix_, "leader"); }

  absl::StatusOr<std::vector<v1::ReplicaInfo>> Registered(bool serializable) {
    etcdserverpb::RangeRequest request;
    request.set_key(absl::StrCat(prefix_, "replicas/"));
    request.set_range_end(EtcdPrefixEnd(request.key()));
    request.set_serializable(serializable);
    auto found = etcd_->Range(request);
    if (!found.ok()) return found.status();
    std::vector<v1::ReplicaInfo> replicas;
    for (const auto& kv : found->kvs()) {
      v1::ReplicaInfo info;
      if (info.ParseFromString(kv.value())) replicas.push_back(std::move(info));
    }
    return replicas;
  }

  std::string LeaderId() {
    etcdserverpb::RangeRequest request;
    request.set_key(LeaderKey());
    auto found = etcd_->Range(request);
    return found.ok() && found->kvs_size() > 0 ? found->kvs(0).value() : std::string();
  }

  // A new lease and the registration under it.
  absl::Status Register() {
    const int64_t sent = clock_->MonotonicNanos();
    auto lease = etcd_->LeaseGrant(kLeaseSeconds);
    if (!lease.ok()) return lease.status();
    lease_ = lease->id();
    lease_valid_until_ns_ = sent + lease->ttl() * kSecondNs;
    return Publish();
  }

  absl::Status Publish() {
    etcdserverpb::TxnRequest txn;
    auto* put = txn.add_success()->mutable_request_put();
    {
      absl::MutexLock lock(&mu_);
      self_.set_agents(agents_.load());
      self_.set_clock_unix_ns(clock_->Now());
      put->set_key(ReplicaKey());
      put->set_value(self_.SerializeAsString());
      published_agents_ = self_.agents();
    }
    put->set_lease(lease_.load());
    bool retried = false;
    auto done = etcd_->Txn(txn, &retried);
    return done.ok() ? absl::OkStatus() : done.status();
  }

  // Takes the leader key if nobody holds it; learns whether this replica holds it.
  void Campaign() {
    etcdserverpb::TxnRequest txn;
    auto* absent = txn.add_compare();
    absent->set_key(LeaderKey());
    absent->set_target(etcdserverpb::Compare::VERSION);
    absent->set_result(etcdserverpb::Compare::EQUAL);
    absent->set_version(0);
    auto* put = txn.add_success()->mutable_request_put();
    put->set_key(LeaderKey());
    std::string id;
    {
      absl::MutexLock lock(&mu_);
      id = self_.replica_id();
    }
    put->set_value(id);
    put->set_lease(lease_.load());
    txn.add_failure()->mutable_request_range()->set_key(LeaderKey());
    bool retried = false;
    auto result = etcd_->Txn(txn, &retried);
    if (!result.ok()) return;  // IsLeader keeps failing safe on the lease's clock
    bool holds = result->succeeded();
    if (!holds && result->responses_size() > 0) {
      const auto& kvs = result->responses(0).response_range().kvs();
      // Ours when it is under our lease (a retried Txn whose first try won).
      holds = !kvs.empty() && kvs[0].value() == id && kvs[0].lease() == lease_.load();
    }
    if (holds != leader_.exchange(holds)) {
      spdlog::info("replica {} {} the cluster's leader", id, holds ? "is now" : "is no longer");
    }
  }

  void Loop() {
    while (true) {
      {
        absl::MutexLock lock(&mu_);
        if (clock_->WaitUntil(&mu_, absl::Condition(&stopping_), clock_->MonotonicNanos() + kLeaseSeconds * kSecondNs / 3)) {
          return;
        }
      }
      // The lease runs from before the request left, never from its answer: a slow answer must
      // not stretch how long this replica believes it leads.
      const int64_t sent = clock_->MonotonicNanos();
      auto ttl = etcd_->LeaseKeepAliveOnce(lease_.load());
      if (ttl.ok() && *ttl > 0) {
        lease_valid_until_ns_ = sent + *ttl * kSecondNs;
        (void)Publish();  // the agent count, and this replica's clock for ClockOffsetNs
        Campaign();
        continue;
      }
      if (ttl.ok() || clock_->MonotonicNanos() >= lease_valid_until_ns_.load()) {
        // The lease is gone (expired while cut off): stop leading, register anew.
        if (leader_.exchange(false)) spdlog::warn("lost the cluster's lease: no longer the leader");
        if (Register().ok()) Campaign();
      }
    }
  }

  EtcdClient* etcd_;
  const std::string prefix_;
  const fleetprof::Clock* const clock_;
  absl::Mutex mu_;
  v1::ReplicaInfo self_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::atomic<int64_t> lease_{0};
  std::atomic<int64_t> lease_valid_until_ns_{0};  // on clock_->MonotonicNanos()
  std::atomic<bool> leader_{false};
  std::atomic<int64_t> agents_{0};
  std::atomic<int64_t> published_agents_{-1};
  std::thread thread_;
};

}  // namespace

std::unique_ptr<Membership> NewEtcdMembership(EtcdClient* etcd, std::string prefix, const fleetprof::Clock* clock) {
  return std::make_unique<EtcdMembership>(etcd, std::move(prefix), clock != nullptr ? clock : RealClock());
}

}  // namespace fleetprof::cluster
