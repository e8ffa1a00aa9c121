#include "storage/cluster/etcd_catalog.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/grpcpp.h"
#include "spdlog/spdlog.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/clock.h"

namespace fleetprof::cluster {
namespace {

// Keys per Range page: the first page as many as the scan expects to take, else small (most
// listings stop early), each next one twice the last up to the cap, so a whole-job scan of
// 10,000 index entries is 2 round trips, and a page of profile records stays a few MiB.
constexpr int64_t kFirstPageKeys = 500;
constexpr int64_t kMaxPageKeys = 8000;

class EtcdCatalog : public Catalog {
 public:
  EtcdCatalog(EtcdClient* etcd, std::string prefix) : etcd_(etcd), prefix_(std::move(prefix)) {}
  ~EtcdCatalog() override { StopWatching(); }

  void StopWatching() override {
    {
      absl::MutexLock lock(&mu_);
      stopping_ = true;
      if (watch_context_ != nullptr) watch_context_->TryCancel();
    }
    if (watcher_thread_.joinable()) watcher_thread_.join();
  }

  void Watch(CatalogWatcher watcher) override {
    absl::MutexLock lock(&mu_);
    if (watcher_thread_.joinable()) return;  // one watcher per catalog: the server's
    watcher_thread_ = std::thread([this, watcher = std::move(watcher)] { WatchLoop(watcher); });
  }

  absl::StatusOr<std::optional<std::string>> Get(CatalogTable table, std::string_view key) override {
    etcdserverpb::RangeRequest request;
    request.set_key(FullKey(table, key));
    auto response = etcd_->Range(request);
    if (!response.ok()) return response.status();
    if (response->kvs_size() == 0) return std::optional<std::string>();
    return std::optional<std::string>(response->kvs(0).value());
  }

  absl::Status Scan(CatalogTable table, const CatalogScan& scan, const CatalogVisitor& visit) override {
    const std::string table_prefix = TablePrefix(table);
    const std::string start = table_prefix + scan.prefix;
    const std::string end = EtcdPrefixEnd(start);
    etcdserverpb::RangeRequest request;
    request.set_limit(scan.expected_keys > 0 ? std::min(kMaxPageKeys, scan.expected_keys) : kFirstPageKeys);
    if (!scan.reverse) {
      // Strictly after `after`: the smallest key greater than it is after + '\0'.
      request.set_key(scan.after.empty() ? start : std::max(start, absl::StrCat(table_prefix, scan.after, std::string(1, '\0'))));
      request.set_range_end(end);
    } else {
      request.set_key(start);
      request.set_range_end(scan.after.empty() ? end : std::min(end, table_prefix + scan.after));
      request.set_sort_order(etcdserverpb::RangeRequest::DESCEND);
      request.set_sort_target(etcdserverpb::RangeRequest::KEY);
    }
    if (request.key() >= request.range_end()) return absl::OkStatus();
    while (true) {
      auto page = etcd_->Range(request);
      if (!page.ok()) return page.status();
      // Every later page at the first one's revision: one consistent view.
      if (request.revision() == 0) request.set_revision(page->header().revision());
      for (const auto& kv : page->kvs()) {
        if (!visit(std::string_view(kv.key()).substr(table_prefix.size()), kv.value())) return absl::OkStatus();
      }
      if (!page->more() || page->kvs_size() == 0) return absl::OkStatus();
      request.set_limit(std::min(kMaxPageKeys, 2 * request.limit()));
      const std::string& last = page->kvs(page->kvs_size() - 1).key();
      if (!scan.reverse) {
        request.set_key(last + std::string(1, '\0'));
      } else {
        request.set_range_end(last);
      }
    }
  }

  absl::Status Commit(const CatalogWrite& write) override {
    // etcd refuses a key written twice in one Txn: the last mutation of each key is the one
    // that counts (as in a RocksDB batch).
    std::map<std::string, const CatalogWrite::Mutation*> last;
    for (const auto& m : write.mutations) last[FullKey(m.table, m.key)] = &m;
    if (write.conditions.size() > kEtcdMaxTxnOps || last.size() > kEtcdMaxTxnOps) {
      return absl::InvalidArgumentError(absl::StrCat("a catalog commit of ", write.conditions.size(), " conditions and ",
                                                     last.size(), " mutations exceeds etcd's ", kEtcdMaxTxnOps,
                                                     " operations per transaction"));
    }
    etcdserverpb::TxnRequest txn;
    for (const auto& c : write.conditions) {
      auto* compare = txn.add_compare();
      compare->set_key(FullKey(c.table, c.key));
      compare->set_result(etcdserverpb::Compare::EQUAL);
      if (c.value) {
        compare->set_target(etcdserverpb::Compare::VALUE);
        compare->set_value(*c.value);
      } else {
        compare->set_target(etcdserverpb::Compare::VERSION);
        compare->set_version(0);
      }
      txn.add_failure()->mutable_request_range()->set_key(compare->key());
    }
    for (const auto& [key, m] : last) {
      if (m->value) {
        auto* put = txn.add_success()->mutable_request_put();
        put->set_key(key);
        put->set_value(*m->value);
      } else {
        txn.add_success()->mutable_request_delete_range()->set_key(key);
      }
    }
    bool retried = false, maybe_applied = false;
    auto response = etcd_->Txn(txn, &retried, &maybe_applied);
    if (!response.ok()) {
      if (!maybe_applied || absl::IsInvalidArgument(response.status())) return response.status();
      return ResolveUnknownOutcome(last, response.status());
    }
    if (response->succeeded()) return absl::OkStatus();
    // A retried Txn whose first try was applied fails its own conditions the second time: if
    // every mutation is in place, it was this commit that put it there.
    if (retried && !write.conditions.empty()) {
      auto applied = Applied(last);
      if (!applied.ok()) return applied.status();
      if (*applied) return absl::OkStatus();
    }
    for (int i = 0; i < response->responses_size() && i < static_cast<int>(write.conditions.size()); ++i) {
      const auto& c = write.conditions[static_cast<size_t>(i)];
      const auto& kvs = response->responses(i).response_range().kvs();
      const bool holds = kvs.empty() ? !c.value.has_value() : (c.value.has_value() && *c.value == kvs[0].value());
      if (!holds) {
        return absl::AbortedError(absl::StrCat(CatalogTableName(c.table), " record ", c.key, " changed before the commit"));
      }
    }
    return absl::AbortedError("a record the commit depends on changed meanwhile");
  }

 private:
  std::string TablePrefix(CatalogTable table) const { return absl::StrCat(prefix_, CatalogTableName(table), "/"); }
  std::string FullKey(CatalogTable table, std::string_view key) const {
    return absl::StrCat(TablePrefix(table), std::string(key));
  }

  // The commit's reply was lost (a partition, a timeout): it may have been applied or not.
  // Nothing is decided until etcd answers again: it is asked, of a quorum, every half second
  // for up to kResolveFor. Applied: the commit succeeded. Not applied: the error it was. No
  // answer: the outcome stays unknown and says so (CommitOutcomeUnknown), so the caller keeps
  // what the commit may have made live (an upload's events) instead of deleting it.
  absl::Status ResolveUnknownOutcome(const std::map<std::string, const CatalogWrite::Mutation*>& mutations,
                                     const absl::Status& error) {
    constexpr auto kResolveFor = std::chrono::seconds(30);
    const Clock& clock = *etcd_->clock();
    const int64_t give_up = clock.MonotonicNanos() + std::chrono::nanoseconds(kResolveFor).count();
    spdlog::warn("etcd commit of {} keys: its outcome is unknown ({}); asking etcd again until it answers",
                 mutations.size(), std::string(error.message()));
    while (true) {
      absl::StatusOr<bool> applied = Applied(mutations);
      if (applied.ok()) {
        spdlog::warn("etcd commit of {} keys whose reply was lost: {}", mutations.size(),
                     *applied ? "applied (it succeeded)" : "not applied");
        return *applied ? absl::OkStatus() : error;
      }
      // Without a leader etcd cannot say soon; neither can waiting here (the caller keeps what the
      // commit may have made live, and a retry reads the catalog again).
      if (clock.MonotonicNanos() >= give_up || absl::StrContains(applied.status().message(), "no leader")) {
        return CommitOutcomeUnknown(absl::StrCat(error.message(), "; whether the commit was applied is unknown: etcd ",
                                                 "did not answer for ", kResolveFor.count(), " s after"));
      }
      SleepUntil(clock, clock.MonotonicNanos() + 500'000'000);
    }
  }

  // Whether every mutation's key now holds what the mutation wrote (deleted: absent), as a
  // quorum sees it (a lagging member's copy could miss a commit that happened).
  absl::StatusOr<bool> Applied(const std::map<std::string, const CatalogWrite::Mutation*>& mutations) {
    for (const auto& [key, m] : mutations) {
      etcdserverpb::RangeRequest request;
      request.set_key(key);
      auto found = etcd_->RangeFromQuorum(request);
      if (!found.ok()) return found.status();
      const bool present = found->kvs_size() > 0;
      if (m->value ? (!present || found->kvs(0).value() != *m->value) : present) return false;
    }
    return true;
  }

  // Follows every change under the prefix from one revision to the next; a broken stream is
  // reopened (on the next member) from the revision after the last one seen, and when etcd has
  // compacted that history away the watcher is told to resync.
  void WatchLoop(const CatalogWatcher& watcher) {
    int64_t next = 0;  // the first revision not yet seen; 0: from now
    for (int failures = 0;; ++failures) {
      grpc::ClientContext context;
      {
        absl::MutexLock lock(&mu_);
        if (stopping_) return;
        watch_context_ = &context;
      }
      auto stream = etcd_->OpenWatch(&context);
      etcdserverpb::WatchRequest request;
      auto* create = request.mutable_create_request();
      create->set_key(prefix_);
      create->set_range_end(EtcdPrefixEnd(prefix_));
      create->set_start_revision(next);
      etcdserverpb::WatchResponse response;
      if (stream->Write(request)) {
        while (stream->Read(&response)) {
          if (response.compact_revision() > 0) {
            // What we missed is gone: start over from now, and say so.
            if (watcher.resync) watcher.resync();
            next = 0;
            break;
          }
          if (response.canceled()) break;
          if (response.created() && next == 0) next = response.header().revision() + 1;
          failures = 0;
          for (const auto& event : response.events()) {
            std::string_view key = event.kv().key();
            next = std::max(next, event.kv().mod_revision() + 1);
            Deliver(watcher, key.substr(std::min(key.size(), prefix_.size())), event.type() == etcdserverpb::Event::DELETE);
          }
        }
      }
      context.TryCancel();
      (void)stream->Finish();
      {
        absl::MutexLock lock(&mu_);
        watch_context_ = nullptr;
        if (stopping_) return;
      }
      etcd_->Advance();
      const Clock& clock = *etcd_->clock();
      SleepUntil(clock, clock.MonotonicNanos() + int64_t{1'000'000} * std::min(2000, 100 << std::min(failures, 5)));
    }
  }

  // "table/key" to the table and its key.
  static void Deliver(const CatalogWatcher& watcher, std::string_view rest, bool deleted) {
    if (!watcher.changed) return;
    for (CatalogTable table : {CatalogTable::kProfiles, CatalogTable::kIndex, CatalogTable::kUploads,
                               CatalogTable::kAgents, CatalogTable::kCaptures, CatalogTable::kSchedules}) {
      const std::string_view name = CatalogTableName(table);
      if (rest.size() > name.size() && rest.substr(0, name.size()) == name && rest[name.size()] == '/') {
        watcher.changed(table, rest.substr(name.size() + 1), deleted);
        return;
      }
    }
  }

  EtcdClient* etcd_;
  const std::string prefix_;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  grpc::ClientContext* watch_context_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::thread watcher_thread_;
};

}  // namespace

std::string EtcdPrefixEnd(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    if (static_cast<unsigned char>(end.back()) != 0xff) {
      end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // etcd: "\0" as range_end means every key from the start key on
}

std::unique_ptr<Catalog> NewEtcdCatalog(EtcdClient* etcd, std::string prefix) {
  return std::make_unique<EtcdCatalog>(etcd, std::move(prefix));
}

}  // namespace fleetprof::cluster
