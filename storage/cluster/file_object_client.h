#pragma once
// Objects as files under a local folder (--object_store=file:///DIR): the object-store
// interface without a network, for one machine, shared mounts and tests. A write goes to a
// temporary file that is renamed into place after fsync, so a reader sees a whole object or none.

#include <memory>
#include <string>

#include "storage/cluster/object_client.h"

namespace fleetprof::cluster {

absl::StatusOr<std::unique_ptr<ObjectClient>> OpenFileObjectClient(const std::string& dir);

}  // namespace fleetprof::cluster
