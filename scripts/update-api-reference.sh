#!/usr/bin/env bash
# Writes docs/api.md and the web app's route table (server/http/web/generated-routes.js) anew
# from the API's declarations (api/api_reference.h): run it after adding or changing a method or
# route in proto/, then commit both. Needs a build (scripts/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build build --target api_tests
FLEETPROF_UPDATE_API_REFERENCE=1 build/bin/api_tests \
  --gtest_filter='ApiReference.DocsApiMdIsWhatTheCatalogDeclares:ApiReference.TheWebAppsRouteTableIsWhatTheCatalogDeclares'
echo "docs/api.md and server/http/web/generated-routes.js written; commit them (and rebuild the server)"
