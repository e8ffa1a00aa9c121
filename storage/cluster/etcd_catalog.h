#pragma once
// The catalog in etcd: each table under "<prefix><table>/" (prefix --etcd_prefix, default
// "/fleetprof/"), each record one key. A scan reads pages of keys at one revision (a consistent
// view however many pages), a commit is one Txn: conditions as Compares (absent: version 0; a
// value: VALUE equal), mutations as its success branch, and the conditions' keys read back in the
// failure branch so that ABORTED names the one that changed. etcd refuses a Txn of more than 128
// operations per branch (--max-txn-ops): the catalog's commits stay far below it, and a larger
// one is refused here before it is sent.

#include <memory>
#include <string>

#include "storage/catalog.h"
#include "storage/cluster/etcd_client.h"

namespace fleetprof::cluster {

constexpr int kEtcdMaxTxnOps = 128;

// `etcd` outlives the catalog.
std::unique_ptr<Catalog> NewEtcdCatalog(EtcdClient* etcd, std::string prefix);

// The end of the key range of everything that starts with `prefix` (etcd's range_end).
std::string EtcdPrefixEnd(std::string_view prefix);

}  // namespace fleetprof::cluster
