#!/usr/bin/env bash
# Configures and builds fleetprof into ./build (or $1), reusing what is already built.
#   scripts/build.sh [BUILD_DIR] [extra cmake args...]
# FLEETPROF_TARGETS="a b" builds only those targets (run.sh: just the three binaries).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
jobs=${FLEETPROF_JOBS:-$(nproc)}
if [[ ! -f "$dir/build.ninja" ]]; then
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
fi
targets=()
for t in ${FLEETPROF_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$dir" -j "$jobs" "${targets[@]}"
