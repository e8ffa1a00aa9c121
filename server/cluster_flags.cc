#include "server/cluster_flags.h"

#include <tuple>

#include "absl/strings/str_cat.h"
#include "common/flags.h"
#include "common/operator_file.h"
#include "common/runtime.h"
#include "storage/cluster/s3_credentials.h"

namespace fleetprof {

void ClusterFlags::AddFlags(FlagSet* flags) {
  flags->AddString("object_store", &object_store,
                   "s3://BUCKET[/PREFIX] or file:///DIR: profiles' bytes go there, and the server is a cluster replica "
                   "(needs --etcd_endpoints); empty: everything in RocksDB under --data_dir");
  flags->AddString("s3_endpoint", &s3_endpoint,
                   "http(s)://HOST:PORT of an S3-compatible store (path-style requests); empty: AWS S3");
  flags->AddString("s3_region", &s3_region, "S3 region the requests are signed for");
  flags->AddString("s3_credentials_file", &s3_credentials_file,
                   "AWS shared-credentials file (profile $AWS_PROFILE or default), read when AWS_ACCESS_KEY_ID is not set");
  flags->AddString("etcd_endpoints", &etcd_endpoints,
                   "http(s)://HOST:PORT[,…] of etcd v3 members: the catalog of a cluster replica (needs --object_store)");
  flags->AddString("etcd_prefix", &etcd_prefix, "key prefix of this cluster's records in etcd");
  flags->AddString("etcd_ca_file", &etcd_ca_file,
                   "PEM of the CA that signed the etcd members' certificates (https:// endpoints; empty: the "
                   "system's roots)");
  flags->AddString("etcd_cert_file", &etcd_cert_file,
                   "PEM client certificate this replica shows etcd (members run with --client-cert-auth); with "
                   "--etcd_key_file");
  flags->AddString("etcd_key_file", &etcd_key_file, "PEM private key of --etcd_cert_file");
  flags->AddInt("cache_mb", &cache_mb, "a replica's local cache under --data_dir, in MiB");
  flags->AddString("replica_id", &replica_id, "this replica's name in the cluster (default <hostname>:<grpc port>)");
  flags->AddInt("orphan_pass_s", &orphan_pass_s,
                "the leader looks for objects no catalog record owns this often, and deletes those it found in "
                "the previous pass too (an ingest in flight is younger than this)");
}

absl::Status ClusterFlags::Validate() const {
  if (object_store.empty() != etcd_endpoints.empty()) {
    return absl::InvalidArgumentError(
        object_store.empty()
            ? "--etcd_endpoints needs --object_store: a replica keeps its catalog in etcd and the profiles' bytes in the "
              "object store, and one without the other would split a profile between the cluster and this disk"
            : "--object_store needs --etcd_endpoints: a replica keeps its catalog in etcd and the profiles' bytes in the "
              "object store, and one without the other would split a profile between the cluster and this disk");
  }
  if (!replica()) return absl::OkStatus();
  if (absl::Status s = CheckFlagRange("cache_mb", cache_mb, 16, 1 << 24); !s.ok()) return s;
  if (absl::Status s = CheckFlagRange("orphan_pass_s", orphan_pass_s, 1, 7 * 24 * 3600); !s.ok()) return s;
  bool tls = false;
  if (auto endpoints = cluster::ParseEtcdEndpoints(etcd_endpoints, &tls); !endpoints.ok()) return endpoints.status();
  if (!tls && !(etcd_ca_file.empty() && etcd_cert_file.empty() && etcd_key_file.empty())) {
    return absl::InvalidArgumentError(
        "--etcd_ca_file, --etcd_cert_file and --etcd_key_file are for https:// --etcd_endpoints; these are http://");
  }
  if (etcd_cert_file.empty() != etcd_key_file.empty()) {
    return absl::InvalidArgumentError("--etcd_cert_file and --etcd_key_file come together");
  }
  if (etcd_prefix.empty() || etcd_prefix.front() != '/' || etcd_prefix.back() != '/') {
    return absl::InvalidArgumentError(absl::StrCat("--etcd_prefix=", etcd_prefix, " must start and end with '/'"));
  }
  if (!s3_endpoint.empty() && s3_endpoint.rfind("http://", 0) != 0 && s3_endpoint.rfind("https://", 0) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("--s3_endpoint=", s3_endpoint, ": expected http(s)://HOST:PORT"));
  }
  if (object_store.rfind("s3://", 0) != 0 && object_store.rfind("file:///", 0) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("--object_store=", object_store, ": expected s3://BUCKET[/PREFIX] or file:///DIR"));
  }
  return absl::OkStatus();
}

absl::StatusOr<cluster::ClusterStoreOptions> ClusterFlags::StoreOptions() const {
  cluster::ClusterStoreOptions options;
  options.object_store = object_store;
  options.s3.endpoint = s3_endpoint;
  while (!options.s3.endpoint.empty() && options.s3.endpoint.back() == '/') options.s3.endpoint.pop_back();
  options.s3.region = s3_region;
  if (object_store.rfind("s3://", 0) == 0) {
    if (absl::Status s = cluster::LoadS3Credentials(s3_credentials_file, &options.s3); !s.ok()) return s;
  }
  auto endpoints = cluster::ParseEtcdEndpoints(etcd_endpoints, &options.etcd.tls);
  if (!endpoints.ok()) return endpoints.status();
  options.etcd.endpoints = *std::move(endpoints);
  // Read once at start; a PEM is far below this.
  for (auto [flag, path, pem] : {std::tuple{"etcd_ca_file", &etcd_ca_file, &options.etcd.ca_pem},
                                 std::tuple{"etcd_cert_file", &etcd_cert_file, &options.etcd.cert_pem},
                                 std::tuple{"etcd_key_file", &etcd_key_file, &options.etcd.key_pem}}) {
    if (path->empty()) continue;
    // The client key is a secret; the CA decides whom we trust: both are the operator's files.
    absl::StatusOr<std::string> read =
        ReadOperatorFile({.what = absl::StrCat("--", flag), .secret = pem == &options.etcd.key_pem}, *path);
    if (!read.ok()) return read.status();
    *pem = *std::move(read);
  }
  options.etcd_prefix = etcd_prefix;
  return options;
}

}  // namespace fleetprof
