#!/usr/bin/env bash
# The replica kill loops of the replica tests as a soak, for more rounds than CI runs:
#   uploads  ReplicaKillsDuringConcurrentUploads… (two replicas on a one-member etcd + s3rver, two
#            uploads at once through the replica list, the replica they stream to killed -9 at a
#            random moment, then restarted; CI: 20 rounds): every upload ends as exactly one
#            profile equal to a one-go upload, and nothing half-done is ever listed;
#   capture  ACaptureRunningWhenItsAgentsReplicaIsKilled… (a capture running on an agent whose
#            replica is killed -9; CI: 3 rounds): it ends INDEXED, or FAILED with a reason.
# Prints each test's figures and the wall time.
#   bench/cluster_soak.sh [--kills 100] [--capture_kills 20] [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
kills=100 capture_kills=20 build=build
while [[ $# -gt 0 ]]; do
  case $1 in
    --kills) kills=$2; shift 2 ;;
    --capture_kills) capture_kills=$2; shift 2 ;;
    *) build=$1; shift ;;
  esac
done
tests=$PWD/$build/bin/cluster_replica_tests
[[ -x $tests ]] || { echo "cluster_soak: build $tests first (scripts/build.sh $build)" >&2; exit 2; }
soak() {  # NAME ROUNDS ENV_VAR TEST
  local log start end status=0
  log=$(mktemp /tmp/fleetprof-soak-XXXXXX.log)
  start=$(date +%s.%N)
  env "$3=$2" CI=true "$tests" --gtest_filter="$4" >"$log" 2>&1 || status=$?
  end=$(date +%s.%N)
  grep -E '^(replica|capture) kills:|^\[  (PASSED|FAILED) ' "$log" || true
  awk -v a="$start" -v b="$end" -v k="$2" -v n="$1" 'BEGIN { printf "%s: wall %.0f s for %d kills (%.1f s per round)\n", n, b - a, k, (b - a) / k }'
  if [[ $status -ne 0 ]]; then
    echo "cluster_soak: $1 FAILED, see $log" >&2
    grep -E 'Failure|Expected|Which is|actual' "$log" | head -20 >&2
    return 1
  fi
  rm -f "$log"
}
failed=0
soak uploads "$kills" FLEETPROF_REPLICA_KILLS 'ReplicaTest.ReplicaKillsDuringConcurrentUploadsLoseNothingAndShowNothingHalfDone' || failed=1
soak capture "$capture_kills" FLEETPROF_CAPTURE_KILLS \
  'ReplicaTest.ACaptureRunningWhenItsAgentsReplicaIsKilledEndsIndexedOrFailedWithAReason' || failed=1
exit $failed
