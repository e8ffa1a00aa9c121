#!/usr/bin/env bash
# Writes docs/flags.md anew from the binaries' --help (scripts/flags-reference.sh): run it after
# adding or changing a flag, then commit the page. Needs a build (scripts/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build build --target fleetprof fleetprof-server fleetprof-agent
bash scripts/flags-reference.sh build/bin > docs/flags.md
echo "docs/flags.md written; commit it"
