#pragma once
// The query layer's operations (QueryService in query.proto), added to the table every edge
// serves from (api/operations.h). A new query is its .proto lines, its QueryApi method and
// one line here.

#include "api/operations.h"
#include "server/query/query_api.h"

namespace fleetprof {

// REQUIRES: `api` outlives `operations`' use.
void AddQueryOperations(QueryApi* api, Operations* operations);

}  // namespace fleetprof
