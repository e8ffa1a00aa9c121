#pragma once
// Keeps the store's health (StoreHealth, storage_engine.h): whether the database takes writes. RocksDB stops writing after a background error (a failed
// flush or compaction: a full disk, the open-files limit, an I/O error) until it recovers or
// Resume() succeeds; this listener turns those events into a state the server reports
// (/healthz 503, gRPC NOT_SERVING, a metric) instead of failing every upload in silence.

#include <cstdint>
#include <functional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "rocksdb/listener.h"
#include "storage/storage_engine.h"

namespace fleetprof {

class StoreHealthListener : public rocksdb::EventListener {
 public:
  // `on_error` (may be empty) hears each background error's reason ("flush", "compaction",
  // "write", "memtable", "manifest"), on RocksDB's thread.
  explicit StoreHealthListener(std::function<void(const std::string& reason)> on_error)
      : on_error_(std::move(on_error)) {}

  StoreHealth Get() const;
  // The database took writes again (Resume succeeded).
  void Recovered();

  void OnBackgroundError(rocksdb::BackgroundErrorReason reason, rocksdb::Status* error) override;
  void OnErrorRecoveryEnd(const rocksdb::BackgroundErrorRecoveryInfo& info) override;

 private:
  std::function<void(const std::string&)> on_error_;
  mutable absl::Mutex mu_;
  StoreHealth health_ ABSL_GUARDED_BY(mu_);
};

// The metric label of a background error's reason.
const char* BackgroundErrorReasonName(rocksdb::BackgroundErrorReason reason);

}  // namespace fleetprof
