#pragma once
// The flags that make fleetprof-server a cluster replica: the object store and etcd (both or
// neither), S3's endpoint, region and credentials, and the replica's identity. docs/cluster.md
// (Starting replicas) is the contract.

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "storage/cluster/cluster_engine.h"

namespace fleetprof {

class FlagSet;

struct ClusterFlags {
  std::string object_store;
  std::string s3_endpoint;
  std::string s3_region = "us-east-1";
  std::string s3_credentials_file;
  std::string etcd_endpoints;
  std::string etcd_prefix = "/fleetprof/";
  std::string etcd_ca_file;    // https endpoints: the CA of the members' certificates
  std::string etcd_cert_file;  // this replica's client certificate (members with --client-cert-auth)
  std::string etcd_key_file;
  int64_t cache_mb = 1024;
  std::string replica_id;
  int64_t orphan_pass_s = 900;

  void AddFlags(FlagSet* flags);
  bool replica() const { return !object_store.empty() || !etcd_endpoints.empty(); }
  // INVALID_ARGUMENT with the reason: one of the pair without the other, a URL of the wrong shape.
  absl::Status Validate() const;
  // The store's options, credentials loaded (from the environment or the credentials file).
  absl::StatusOr<cluster::ClusterStoreOptions> StoreOptions() const;
};

}  // namespace fleetprof
