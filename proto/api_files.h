#pragma once
// The proto files of fleetprof's API (proto/fleetprof/v1), as names in the generated
// descriptor pool. Calling this links every file's descriptors, so that code walking the API
// (api/api_catalog.h) sees each service even where nothing else references its file.

#include <string>
#include <vector>

namespace fleetprof {

// "fleetprof/v1/query.proto", "querier/v1/querier.proto", …: every file of proto/CMakeLists.txt's API_PROTOS.
const std::vector<std::string>& ApiProtoFileNames();

}  // namespace fleetprof
