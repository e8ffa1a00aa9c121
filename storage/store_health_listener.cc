#include "storage/store_health_listener.h"

namespace fleetprof {

const char* BackgroundErrorReasonName(rocksdb::BackgroundErrorReason reason) {
  switch (reason) {
    case rocksdb::BackgroundErrorReason::kFlush:
    case rocksdb::BackgroundErrorReason::kFlushNoWAL:
      return "flush";
    case rocksdb::BackgroundErrorReason::kCompaction:
      return "compaction";
    case rocksdb::BackgroundErrorReason::kWriteCallback:
      return "write";
    case rocksdb::BackgroundErrorReason::kMemTable:
      return "memtable";
    case rocksdb::BackgroundErrorReason::kManifestWrite:
    case rocksdb::BackgroundErrorReason::kManifestWriteNoWAL:
      return "manifest";
  }
  return "other";
}

StoreHealth StoreHealthListener::Get() const {
  absl::MutexLock lock(&mu_);
  return health_;
}

void StoreHealthListener::Recovered() {
  absl::MutexLock lock(&mu_);
  health_.serving = true;
  health_.error.clear();
}

void StoreHealthListener::OnBackgroundError(rocksdb::BackgroundErrorReason reason,
                                            rocksdb::Status* error) {
  {
    absl::MutexLock lock(&mu_);
    ++health_.background_errors;
    // RocksDB calls this for every background error; one that it ignores (an OK status after
    // this call, as it may pass) does not stop writes.
    if (error != nullptr && !error->ok()) {
      health_.serving = false;
      health_.error = error->ToString();
    }
  }
  if (on_error_) on_error_(BackgroundErrorReasonName(reason));
}

void StoreHealthListener::OnErrorRecoveryEnd(const rocksdb::BackgroundErrorRecoveryInfo& info) {
  if (info.new_bg_error.ok()) Recovered();  // RocksDB's own recovery (a retryable error)
}

}  // namespace fleetprof
