#pragma once
// The API reference (docs/api.md) as the catalog (api_catalog.h) says it: every service, every
// method with its scope, its HTTP routes with their query parameters, and what it takes and
// answers. Generated, never hand-kept: tests/api/api_reference_test.cc fails when the committed
// file differs, and scripts/update-api-reference.sh writes it anew (and the web app's route table).

#include <string>

#include "api/api_catalog.h"

namespace fleetprof {

std::string RenderApiReference(const ApiCatalog& catalog);

// The web app's route table (server/http/web/generated-routes.js): each method's HTTP routes by
// the method's name, so the app's JavaScript names a method and never writes an /api/v1 path.
// The same test checks the committed file against the catalog.
std::string RenderWebRoutes(const ApiCatalog& catalog);

}  // namespace fleetprof
