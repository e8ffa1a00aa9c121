#include "server/fleet/agent_registry.h"

#include <set>

#include <algorithm>
#include <optional>

#include "absl/synchronization/notification.h"

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace fleetprof {
namespace {
constexpr int64_t kHistoryNs = int64_t{3600} * 1'000'000'000;
}  // namespace

AgentRegistry::AgentRegistry(AgentTable* store, ServerMetrics* metrics, AgentLimits limits, Clock* clock)
    : store_(store), metrics_(metrics), limits_(limits), clock_(clock) {
  auto writer = WorkerPool::Start("the agent record writer", 1);
  if (writer.ok()) {
    writer_ = *std::move(writer);
  } else {
    spdlog::warn("agent records are written on the stream threads: {}", std::string(writer.status().message()));
  }
  auto stored = store_->List();
  if (!stored.ok()) {
    spdlog::warn("could not load known agents: {}", std::string(stored.status().message()));
    return;
  }
  absl::MutexLock lock(&mu_);
  for (auto& agent : *stored) {
    agent.set_state(v1::AgentInfo::DISCONNECTED);  // nobody is connected to a server that just started
    agents_[agent.node()] = std::move(agent);
  }
}

AgentRegistry::~AgentRegistry() { writer_.reset(); }

void AgentRegistry::PostWriteLocked(std::function<void()> write) {
  if (writer_) {
    writer_->Post(std::move(write));
  } else {
    write();
  }
}

void AgentRegistry::WaitForWrites() {
  absl::Notification done;
  {
    absl::MutexLock lock(&mu_);
    PostWriteLocked([&done] { done.Notify(); });
  }
  done.WaitForNotification();
}

void AgentRegistry::Persist(const v1::AgentInfo& info) {
  if (absl::Status s = store_->Put(info); !s.ok()) {
    spdlog::warn("could not store agent node={}: {}", info.node(), std::string(s.message()));
  }
}

absl::Status AgentRegistry::CheckMessage(const char* what, size_t bytes, int targets) const {
  if (static_cast<int64_t>(bytes) > limits_.max_message_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat("the agent's ", what, " has ", bytes, " bytes, more than --max_agent_message_kb=",
                                                     limits_.max_message_bytes >> 10, " KiB allows"));
  }
  if (targets > limits_.max_targets_per_agent) {
    return absl::ResourceExhaustedError(absl::StrCat("the agent's ", what, " lists ", targets,
                                                     " targets, more than --max_targets_per_agent=",
                                                     limits_.max_targets_per_agent, " allows"));
  }
  return absl::OkStatus();
}

absl::Status AgentRegistry::CheckHello(const v1::AgentHello& hello) {
  if (absl::Status s = CheckMessage("hello", hello.ByteSizeLong(), hello.targets_size()); !s.ok()) return s;
  absl::MutexLock lock(&mu_);
  return CheckRoomLocked(hello.node());
}

absl::Status AgentRegistry::CheckRoomLocked(const std::string& node) const {
  if (agents_.contains(node) || static_cast<int64_t>(agents_.size()) < limits_.max_agents) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat("the server knows ", agents_.size(),
                                                   " agents, as many as --max_agents allows (departed ones go "
                                                   "after --agent_expiry_days)"));
}

absl::StatusOr<int64_t> AgentRegistry::Connected(const v1::AgentHello& hello, Sender sender,
                                                 std::function<void()> close, Principal principal) {
  if (absl::Status s = CheckMessage("hello", hello.ByteSizeLong(), hello.targets_size()); !s.ok()) return s;
  int64_t session = 0;
  int64_t connected = 0;
  {
    absl::MutexLock lock(&mu_);
    if (absl::Status s = CheckRoomLocked(hello.node()); !s.ok()) return s;
    v1::AgentInfo& info = agents_[hello.node()];
    info.set_node(hello.node());
    info.set_state(v1::AgentInfo::CONNECTED);
    info.set_version(hello.version());
    info.set_last_seen_ns(clock_->Now());
    *info.mutable_targets() = hello.targets();
    info.set_replica_id(replica_id_);
    refreshed_at_[hello.node()] = info.last_seen_ns();
    session = next_session_++;
    sessions_[hello.node()] = Session{session, std::move(sender), std::move(close), {}, std::move(principal)};
    connected = static_cast<int64_t>(sessions_.size());
    PostWriteLocked([this, record = info] { Persist(record); });
  }
  metrics_->SetConnectedAgents(connected);
  spdlog::info("agent connected node={} version={} targets={}", hello.node(), hello.version(),
               hello.targets_size());
  return session;
}

absl::Status AgentRegistry::Heartbeat(const std::string& node, const v1::AgentHeartbeat& heartbeat) {
  if (absl::Status s = CheckMessage("heartbeat", heartbeat.ByteSizeLong(), heartbeat.targets_size()); !s.ok()) {
    return s;
  }
  absl::MutexLock lock(&mu_);
  auto it = agents_.find(node);
  if (it == agents_.end()) return absl::OkStatus();
  const int64_t now = clock_->Now();
  it->second.set_last_seen_ns(now);
  const bool targets_changed =
      it->second.targets_size() != heartbeat.targets_size() ||
      !std::equal(heartbeat.targets().begin(), heartbeat.targets().end(), it->second.targets().begin(),
                  [](const v1::Target& a, const v1::Target& b) { return a.SerializeAsString() == b.SerializeAsString(); });
  *it->second.mutable_targets() = heartbeat.targets();
  if (heartbeat.has_clock_offset_ns()) {
    it->second.set_clock_offset_ns(heartbeat.clock_offset_ns());
    it->second.set_clock_uncertainty_ns(heartbeat.clock_uncertainty_ns());
  }
  if (!replica_id_.empty() && (targets_changed || now - refreshed_at_[node] >= kClusterRefreshNs)) {
    refreshed_at_[node] = now;
    it->second.set_replica_id(replica_id_);
    // Cluster: the record other replicas list.
    PostWriteLocked([this, record = it->second] {
      if (absl::Status s = store_->Put(record); !s.ok()) {
        spdlog::warn("could not refresh agent node={} in the catalog: {}", record.node(), std::string(s.message()));
      }
    });
  }
  // Heartbeats are frequent: keep them in memory; the store gets connect/disconnect.
  auto session = sessions_.find(node);
  if (session != sessions_.end()) {
    session->second.devices.assign(heartbeat.devices().begin(), heartbeat.devices().end());
  }
  // The last hour of samples, within a byte budget per node: memory stays bounded whatever
  // the agents send (at most --max_agents × --max_node_history_kb).
  History& history = history_[node];
  for (const auto& d : heartbeat.devices()) {
    history.samples.push_back(d);
    history.bytes += static_cast<int64_t>(d.ByteSizeLong());
  }
  const int64_t keep_from = now - kHistoryNs;
  while (!history.samples.empty() &&
         (history.samples.front().sampled_at_ns() < keep_from || history.bytes > limits_.max_history_bytes)) {
    history.bytes -= static_cast<int64_t>(history.samples.front().ByteSizeLong());
    history.samples.pop_front();
  }
  return absl::OkStatus();
}

std::vector<v1::DeviceSample> AgentRegistry::DeviceHistory(const std::string& node, int64_t from_ns,
                                                            int64_t to_ns) {
  absl::MutexLock lock(&mu_);
  std::vector<v1::DeviceSample> out;
  auto it = history_.find(node);
  if (it == history_.end()) return out;
  for (const auto& d : it->second.samples) {
    if (d.sampled_at_ns() >= from_ns && d.sampled_at_ns() <= to_ns) out.push_back(d);
  }
  return out;
}

// The closers run under mu_, on purpose: a close cancels the stream's call (TryCancel, which
// waits for nothing), and the call's context lives only while its session is listed, since
// the stream's end calls Disconnected, which takes mu_, before gRPC frees the context. Outside
// the lock a close could reach a context already freed.
int AgentRegistry::CloseSessionsUnless(const std::function<bool(const Principal&)>& keep) {
  absl::MutexLock lock(&mu_);
  int closed = 0;
  for (auto& [node, session] : sessions_) {
    if (keep(session.principal)) continue;
    spdlog::info("agent node={}: its token was revoked; closing its stream", node);
    session.close();
    ++closed;
  }
  return closed;
}

void AgentRegistry::CloseAll() {
  absl::MutexLock lock(&mu_);
  for (auto& [node, session] : sessions_) session.close();
}

bool AgentRegistry::Send(const std::string& node, const v1::ServerMessage& message) {
  Sender sender;
  {
    absl::MutexLock lock(&mu_);
    auto it = sessions_.find(node);
    if (it == sessions_.end()) return false;
    sender = it->second.sender;
  }
  return sender(message);  // outside the lock: a slow stream must not block the registry
}

std::map<std::string, std::vector<v1::DeviceSample>> AgentRegistry::DeviceSamples() {
  absl::MutexLock lock(&mu_);
  std::map<std::string, std::vector<v1::DeviceSample>> out;
  for (const auto& [node, session] : sessions_) out[node] = session.devices;
  return out;
}

void AgentRegistry::Disconnected(const std::string& node, int64_t session) {
  int64_t connected = 0;
  {
    absl::MutexLock lock(&mu_);
    auto live = sessions_.find(node);
    if (live == sessions_.end() || live->second.number != session) return;
    sessions_.erase(live);
    v1::AgentInfo& info = agents_[node];
    info.set_state(v1::AgentInfo::DISCONNECTED);
    connected = static_cast<int64_t>(sessions_.size());
    PostWriteLocked([this, record = info, self = replica_id_] {
      if (!self.empty()) {
        // The node's stream moved to another replica: the catalog's record is that replica's now.
        auto stored = store_->Find(record.node());
        if (stored.ok() && stored->has_value() && (*stored)->state() == v1::AgentInfo::CONNECTED &&
            (*stored)->replica_id() != self) {
          spdlog::info("agent node={} moved to replica {}", record.node(), (*stored)->replica_id());
          return;
        }
      }
      Persist(record);
      spdlog::info("agent disconnected node={}", record.node());
    });
  }
  metrics_->SetConnectedAgents(connected);
}

std::vector<v1::AgentInfo> AgentRegistry::List() {
  absl::MutexLock lock(&mu_);
  std::vector<v1::AgentInfo> out;
  for (const auto& [node, info] : agents_) out.push_back(info);
  return out;
}

std::vector<v1::AgentInfo> AgentRegistry::ListNode(const std::string& node) {
  absl::MutexLock lock(&mu_);
  auto it = agents_.find(node);
  if (it == agents_.end()) return {};
  return {it->second};
}

absl::StatusOr<v1::ListAgentsResponse> AgentRegistry::ListAgents() {
  // Cluster mode: every replica's agents, from the catalog; this replica's own from memory.
  std::map<std::string, v1::AgentInfo> listed;
  if (!ReplicaId().empty()) {
    auto stored = store_->List();
    if (!stored.ok()) return stored.status();
    Membership* membership;
    {
      absl::MutexLock lock(&mu_);
      membership = membership_;
    }
    // Which replicas live is etcd's word (their leases, expired on etcd's own clock), and
    // since when: a replica restarted under the same id left its earlier run's records
    // CONNECTED. Both times of that test come from the one replica's clock.
    auto replicas = membership->LiveReplicas();
    if (!replicas.ok()) return replicas.status();
    std::map<std::string, int64_t> live_since;
    for (const auto& replica : *replicas) live_since[replica.replica_id()] = replica.since_ns();
    for (auto& agent : *stored) {
      auto replica = live_since.find(agent.replica_id());
      if (agent.state() == v1::AgentInfo::CONNECTED &&
          (replica == live_since.end() || agent.last_seen_ns() < replica->second)) {
        agent.set_state(v1::AgentInfo::DISCONNECTED);  // its replica died without saying so
      }
      std::string node = agent.node();
      listed[node] = std::move(agent);
    }
  }
  absl::MutexLock lock(&mu_);
  for (const auto& [node, info] : agents_) {
    const bool local = sessions_.contains(node);
    if (!local && listed.contains(node)) {
      // Another replica's record is the truth; one of this replica's own without a stream
      // here is a leftover (a write that raced the disconnect).
      auto& record = listed[node];
      if (record.replica_id() == replica_id_ && record.state() == v1::AgentInfo::CONNECTED) {
        record.set_state(v1::AgentInfo::DISCONNECTED);
      }
      continue;
    }
    listed[node] = info;
  }
  v1::ListAgentsResponse response;
  for (auto& [node, info] : listed) {
    v1::AgentInfo* agent = response.add_agents();
    *agent = std::move(info);
    auto session = sessions_.find(node);
    if (session == sessions_.end()) continue;
    for (const auto& sample : session->second.devices) *agent->add_devices() = sample;
  }
  return response;
}

void AgentRegistry::StoredAgentChanged(const std::string& node) {
  const std::string self = ReplicaId();
  if (self.empty()) return;
  auto stored = store_->Find(node);
  if (!stored.ok() || !stored->has_value()) return;
  const v1::AgentInfo& record = **stored;
  if (record.state() != v1::AgentInfo::CONNECTED || record.replica_id() == self) return;
  // The node connected through another replica: one stream per node across the cluster.
  absl::MutexLock lock(&mu_);
  auto session = sessions_.find(node);
  if (session == sessions_.end()) return;
  spdlog::info("agent node={} connected through replica {}: closing its stream here", node, record.replica_id());
  session->second.close();
}

int AgentRegistry::ForgetDeparted(int64_t before_ns) {
  std::vector<std::string> gone;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = agents_.begin(); it != agents_.end();) {
      const v1::AgentInfo& a = it->second;
      if (a.state() == v1::AgentInfo::CONNECTED || sessions_.count(a.node()) || a.last_seen_ns() >= before_ns) {
        ++it;
        continue;
      }
      gone.push_back(a.node());
      history_.erase(a.node());
      it = agents_.erase(it);
    }
    if (!gone.empty()) {
      PostWriteLocked([this, gone] {
        for (const std::string& node : gone) {
          if (absl::Status s = store_->Delete(node); !s.ok()) {
            spdlog::warn("could not forget agent {}: {}", node, std::string(s.message()));
          }
        }
      });
    }
  }
  return static_cast<int>(gone.size());
}

}  // namespace fleetprof
