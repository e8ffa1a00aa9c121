#!/usr/bin/env bash
# Writes docs/api.md anew from the API's declarations (api/api_reference.h): run it after adding
# or changing a method or route in proto/, then commit the page. Needs a build (scripts/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build build --target api_tests
FLEETPROF_UPDATE_API_REFERENCE=1 build/bin/api_tests --gtest_filter='ApiReference.*'
echo "docs/api.md written; commit it"
