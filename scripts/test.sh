#!/usr/bin/env bash
# Builds fleetprof and runs every test: the normal build (g++), then the whole suite again under
# AddressSanitizer + UndefinedBehaviorSanitizer built with clang, whose -Wthread-safety checks
# every lock annotation (a guarded member read without its lock fails that build), then each
# fuzzer for 30 s. This is what CI runs.
#   scripts/test.sh            both builds
#   scripts/test.sh --quick    normal build only
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh

echo "== build (RelWithDebInfo)"
bash scripts/build.sh build
echo "== tests"
(cd build && ctest -j2 --output-on-failure --timeout 900)

if [[ "${1:-}" != "--quick" ]]; then
  echo "== build (clang: ASan + UBSan, -Wthread-safety -Werror=thread-safety)"
  CC=clang CXX=clang++ bash scripts/build.sh build-asan -DFLEETPROF_SANITIZE=ON
  echo "== tests under sanitizers"
  # Peak-memory and speed figures mean nothing under ASan's shadow memory: those run above. So
  # do the cluster's replica tests (real etcd, s3rver and server processes, minutes of them);
  # the cluster's storage engines (S3 client, etcd catalog, their fault tests) run here too. The
  # container image holds the normal build's binaries: it is built and run above.
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
     UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
     ctest -j2 --output-on-failure --timeout 1200 -LE "memory|cluster_replicas|image")
  echo "== fuzzing: each libFuzzer target for 30 s (scripts/fuzz.sh)"
  bash scripts/fuzz.sh 30
fi
echo "== all tests passed"
