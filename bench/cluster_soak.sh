#!/usr/bin/env bash
# The replica kill loop as a soak: ReplicaKillsDuringConcurrentUploads… from the replica tests
# (two replicas on a one-member etcd + s3rver, two uploads at once through the replica list,
# the replica they stream to killed -9 at a random moment, then restarted), run for more rounds
# than CI's 20. The test asserts that every upload ends as exactly one profile equal to a one-go
# upload and that nothing half-done is ever listed; this prints its figures and the wall time.
#   bench/cluster_soak.sh [--kills 100] [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
kills=100 build=build
while [[ $# -gt 0 ]]; do
  case $1 in
    --kills) kills=$2; shift 2 ;;
    *) build=$1; shift ;;
  esac
done
tests=$PWD/$build/bin/cluster_replica_tests
[[ -x $tests ]] || { echo "cluster_soak: build $tests first (scripts/build.sh $build)" >&2; exit 2; }
log=$(mktemp /tmp/fleetprof-soak-XXXXXX.log)
start=$(date +%s.%N)
status=0
FLEETPROF_REPLICA_KILLS=$kills CI=true "$tests" \
  --gtest_filter='ReplicaTest.ReplicaKillsDuringConcurrentUploadsLoseNothingAndShowNothingHalfDone' >"$log" 2>&1 || status=$?
end=$(date +%s.%N)
grep -E '^replica kills:|^\[  (PASSED|FAILED) ' "$log" || true
awk -v a="$start" -v b="$end" -v k="$kills" 'BEGIN { printf "wall %.0f s for %d kills (%.1f s per round)\n", b - a, k, (b - a) / k }'
if [[ $status -ne 0 ]]; then
  echo "cluster_soak: FAILED, see $log" >&2
  grep -E 'Failure|Expected|Which is|actual' "$log" | head -20 >&2
  exit 1
fi
rm -f "$log"
