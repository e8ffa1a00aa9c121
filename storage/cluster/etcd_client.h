#pragma once
// A client of etcd v3's gRPC API over one channel per endpoint. A call that finds its member
// unavailable (down, partitioned, mid-election: "leader changed", "no leader") moves to the next
// member and is tried again with capped, jittered backoff until its time budget is spent; then it
// fails fast with UNAVAILABLE naming etcd. Other errors map to the matching status at once.

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "etcd/etcd_rpc.grpc.pb.h"

namespace fleetprof::cluster {

struct EtcdSettings {
  std::vector<std::string> endpoints;  // HOST:PORT (ParseEtcdEndpoints)
  // https:// endpoints: TLS with the members, checked against `ca_pem` (PEM; empty: the
  // system's roots), presenting `cert_pem` + `key_pem` when given (members that run with
  // --client-cert-auth ask for one).
  bool tls = false;
  std::string ca_pem;
  std::string cert_pem;
  std::string key_pem;
  // One try. A loaded 2-core machine can keep a healthy member from answering for seconds.
  absl::Duration call_timeout = absl::Seconds(4);
  // All tries of one call together while members answer "no leader" or cannot be reached (calls
  // ask for a member with a leader, "hasleader", so without quorum each try fails at once and
  // the call gives up after this: fast, but long enough to ride out an election).
  absl::Duration retry_budget = absl::Seconds(3);
  // All tries together while members are reachable but slow (tries that time out, or that etcd
  // answers with its own "request timed out").
  absl::Duration slow_budget = absl::Seconds(12);
  // Hears every call's outcome (metrics): op "range", "txn", …; result "ok", "retried", "error".
  std::function<void(std::string_view op, std::string_view result, double seconds)> on_request;
  // The time the calls' deadlines, budgets and pauses run on (null: RealClock()).
  const Clock* clock = nullptr;
};

// Splits "http://a:2379,http://b:2379" (or all https://) into HOST:PORT endpoints, and says
// in `*tls` whether they are https; INVALID_ARGUMENT naming a bad one or a mix of the two.
absl::StatusOr<std::vector<std::string>> ParseEtcdEndpoints(std::string_view list, bool* tls = nullptr);

class EtcdClient {
 public:
  static absl::StatusOr<std::unique_ptr<EtcdClient>> Connect(EtcdSettings settings);

  // Linearizable; when no quorum answers, served by any live member from what it has
  // (serializable: possibly behind, never wrong about what was committed).
  absl::StatusOr<etcdserverpb::RangeResponse> Range(const etcdserverpb::RangeRequest& request);
  // Linearizable or an error: never the serializable fallback. For deciding what happened.
  absl::StatusOr<etcdserverpb::RangeResponse> RangeFromQuorum(const etcdserverpb::RangeRequest& request);
  // `*retried` says whether the request may have been sent more than once (a first try that
  // timed out may still have been applied): a conditional transaction's caller then checks.
  // On failure, `*maybe_applied` (when given) says whether some try reached a member that may
  // have applied it (a lost reply, a timeout, a connection broken mid-call) rather than being
  // refused outright (no leader, no connection).
  absl::StatusOr<etcdserverpb::TxnResponse> Txn(const etcdserverpb::TxnRequest& request, bool* retried,
                                                bool* maybe_applied = nullptr);
  absl::Status Compact(int64_t revision);
  absl::StatusOr<etcdserverpb::LeaseGrantResponse> LeaseGrant(int64_t ttl_seconds);
  absl::Status LeaseRevoke(int64_t id);
  // One keep-alive round: the lease's remaining TTL, 0 when it has expired.
  absl::StatusOr<int64_t> LeaseKeepAliveOnce(int64_t id);

  // A Watch stream on the current member; after it fails, Advance() moves to the next one.
  std::unique_ptr<grpc::ClientReaderWriter<etcdserverpb::WatchRequest, etcdserverpb::WatchResponse>> OpenWatch(
      grpc::ClientContext* context);
  void Advance() { current_.fetch_add(1); }

  // The members, for /api/v1/cluster and messages.
  std::string Describe() const;
  // Whether the last call reached a member that answered (not a verdict on quorum).
  bool healthy() const { return healthy_.load(); }
  // The clock of its settings: what the catalog and membership over it wait on too.
  const Clock* clock() const { return clock_; }

 private:
  explicit EtcdClient(EtcdSettings settings);
  // One Range with its own retries (a leader required unless the request is serializable).
  absl::StatusOr<etcdserverpb::RangeResponse> RangeOn(const char* op, const etcdserverpb::RangeRequest& request,
                                                      absl::Duration budget);
  // Runs `call` against the current member, moving on and retrying as the header says.
  absl::Status Call(const char* op, const std::function<grpc::Status(grpc::ClientContext*, size_t member)>& call,
                    bool* retried = nullptr, bool require_leader = true, absl::Duration budget = absl::ZeroDuration(),
                    bool* maybe_delivered = nullptr);

  struct Member {
    std::string address;
    std::unique_ptr<etcdserverpb::KV::Stub> kv;
    std::unique_ptr<etcdserverpb::Lease::Stub> lease;
    std::unique_ptr<etcdserverpb::Watch::Stub> watch;
  };
  const EtcdSettings settings_;
  const Clock* const clock_;
  std::vector<Member> members_;
  std::atomic<size_t> current_{0};
  std::atomic<bool> healthy_{true};
};

}  // namespace fleetprof::cluster
