#pragma once
// Which agents exist, which are connected now, and what targets they see. Connected state
// lives in memory; every change is also written to the store so `fleetprof agents` lists
// disconnected nodes after a server restart too.
//
// Locks: mu_ guards what is in memory and is never held across a store write or a message
// sent, so listing agents never waits on either (closing a stream, which waits for nothing,
// happens under it: see CloseAll). The registry calls nobody back under it.
//
// Store writes: connect, heartbeat and disconnect are called on gRPC's callback threads, which
// must never wait on I/O (a blocking etcd call there starved gRPC's executor and hung the
// server's shutdown for the whole etcd budget). So every record write goes to one writer
// thread, posted under mu_ in the order the memory changed: the store receives a node's
// records in the order they were made.

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "common/worker_pool.h"
#include "auth/scopes.h"
#include "fleetprof/v1/agent.pb.h"
#include "server/server_metrics.h"
#include "storage/fleet_tables.h"
#include "storage/membership.h"

namespace fleetprof {

// What agents may make the server hold: every value comes from the network.
struct AgentLimits {
  int64_t max_agents = 10'000;             // --max_agents: nodes known, connected or not
  int64_t max_targets_per_agent = 1'024;   // --max_targets_per_agent
  int64_t max_message_bytes = 256 << 10;   // --max_agent_message_kb: one hello or heartbeat
  int64_t max_history_bytes = 1 << 20;     // --max_node_history_kb: device samples kept per node
};

class AgentRegistry {
 public:
  // `clock` stamps when each agent was last seen and ages its device history.
  AgentRegistry(AgentTable* store, ServerMetrics* metrics, AgentLimits limits, Clock* clock);
  // Writes what is queued for the store, then stops the writer.
  ~AgentRegistry();
  AgentRegistry(const AgentRegistry&) = delete;
  AgentRegistry& operator=(const AgentRegistry&) = delete;

  // Writes one message down an agent's Connect stream; false once the stream is gone.
  using Sender = std::function<bool(const v1::ServerMessage&)>;

  // A Connect stream said hello; `close` ends that stream. Returns a session number for
  // Disconnected; RESOURCE_EXHAUSTED, naming the flag, for a hello over a limit or a new node
  // past --max_agents.
  // What Connected would refuse `hello` for, checked before the stream is welcomed.
  absl::Status CheckHello(const v1::AgentHello& hello);
  absl::StatusOr<int64_t> Connected(const v1::AgentHello& hello, Sender sender, std::function<void()> close,
                                    Principal principal = AnonymousPrincipal());
  // Ends the streams whose principal `keep` rejects (tokens revoked by a reload); returns
  // how many.
  int CloseSessionsUnless(const std::function<bool(const Principal&)>& keep);
  // Ends every agent stream now (shutdown: agents reconnect to the next server at once).
  void CloseAll();
  // RESOURCE_EXHAUSTED, naming the flag, for a heartbeat over a limit (the stream then ends).
  absl::Status Heartbeat(const std::string& node, const v1::AgentHeartbeat& heartbeat);
  // The stream of `session` ended (a newer session of the same node stays connected).
  void Disconnected(const std::string& node, int64_t session);
  // Cluster mode: this replica's id. Agents are then listed from the catalog (every replica's),
  // a connected agent's record is refreshed every kClusterRefreshNs, and a node's stream on
  // another replica ends this one's (StoredAgentChanged). Called once, as the replica joins.
  // `membership` (outliving the registry) says which replicas live: an agent recorded
  // CONNECTED on a replica whose lease etcd has expired is listed DISCONNECTED. Never by
  // comparing the record's last_seen_ns with this replica's clock: another machine's clock
  // wrote it, and one set 300 s off would call every agent of the others dead.
  void ShareThroughCatalog(std::string replica_id, Membership* membership) {
    absl::MutexLock lock(&mu_);
    replica_id_ = std::move(replica_id);
    membership_ = membership;
  }
  // The catalog's record of `node` changed (another replica's write, seen through the watch).
  void StoredAgentChanged(const std::string& node);
  static constexpr int64_t kClusterRefreshNs = int64_t{15} * 1'000'000'000;

  // Whether `node`'s stream is connected to this server.
  bool HoldsStream(const std::string& node) {
    absl::MutexLock lock(&mu_);
    return sessions_.contains(node);
  }
  // Agent streams connected to this server now.
  int64_t ConnectedCount() {
    absl::MutexLock lock(&mu_);
    return static_cast<int64_t>(sessions_.size());
  }
  std::vector<v1::AgentInfo> List();
  // The agent of `node` alone (none or one): a capture of one node's target need not copy them all.
  std::vector<v1::AgentInfo> ListNode(const std::string& node);
  // Every agent as the API shows it: connected ones with their latest device samples. In
  // cluster mode the catalog's error when it cannot be read (UNAVAILABLE naming etcd): an
  // empty list would say "no agents" when the truth is "cannot tell".
  absl::StatusOr<v1::ListAgentsResponse> ListAgents();
  // Sends `message` to the connected agent of `node`; false if it is not connected.
  bool Send(const std::string& node, const v1::ServerMessage& message);
  // Latest device samples of every connected agent, by node.
  std::map<std::string, std::vector<v1::DeviceSample>> DeviceSamples();
  // Every sample `node` reported with sampled_at_ns in [from_ns, to_ns] (the last hour is kept).
  std::vector<v1::DeviceSample> DeviceHistory(const std::string& node, int64_t from_ns, int64_t to_ns);
  // Forgets the agents that are disconnected and were last seen before `before_ns` (departed
  // nodes), in memory and in the store; returns how many.
  int ForgetDeparted(int64_t before_ns);
  // Returns once every record change made so far is in the store (shutdown, tests).
  void WaitForWrites();

 private:
  // Queues a store write on the writer thread; under mu_, so writes keep the order of the
  // memory changes they record. Without a writer (its thread could not start) it runs inline.
  void PostWriteLocked(std::function<void()> write) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Persist(const v1::AgentInfo& info);
  // The limits a hello's or heartbeat's targets and size break, if any.
  absl::Status CheckMessage(const char* what, size_t bytes, int targets) const;
  // RESOURCE_EXHAUSTED when `node` is new and --max_agents are known.
  absl::Status CheckRoomLocked(const std::string& node) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  AgentTable* store_;
  ServerMetrics* metrics_;
  const AgentLimits limits_;
  Clock* clock_;
  absl::Mutex mu_;
  std::map<std::string, v1::AgentInfo> agents_ ABSL_GUARDED_BY(mu_);
  struct Session {
    int64_t number = 0;
    Sender sender;
    std::function<void()> close;
    std::vector<v1::DeviceSample> devices;
    Principal principal;
  };
  std::map<std::string, Session> sessions_ ABSL_GUARDED_BY(mu_);  // node -> live session
  struct History {
    std::deque<v1::DeviceSample> samples;
    int64_t bytes = 0;  // their ByteSizeLong, against limits_.max_history_bytes
  };
  std::map<std::string, History> history_ ABSL_GUARDED_BY(mu_);  // node -> recent samples
  std::map<std::string, int64_t> refreshed_at_ ABSL_GUARDED_BY(mu_);  // cluster: node -> last record write
  std::string replica_id_ ABSL_GUARDED_BY(mu_);  // cluster mode when set
  Membership* membership_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::string ReplicaId() {
    absl::MutexLock lock(&mu_);
    return replica_id_;
  }
  int64_t next_session_ ABSL_GUARDED_BY(mu_) = 1;
  std::unique_ptr<WorkerPool> writer_;  // one thread: the store's writes in order; last, so it goes first
};

}  // namespace fleetprof
