#!/usr/bin/env bash
# The HTTP listener against another build's: server A (--server_a, e.g. a copy of a main
# build's bin/fleetprof-server) and server B (this build's) with the same data, measured by
# bench/http_api_bench.cc in alternating batches in one run; prints p50/p99 of each and B/A.
#   [FLEETPROF_B_FLAGS='--http_threads=16'] bench/http_listener_ab.sh --server_a PATH [BUILD_DIR] [--profiles N]
set -euo pipefail
cd "$(dirname "$0")/.."
[[ "${1:-}" == "--server_a" ]] || { echo "usage: $0 --server_a PATH [BUILD_DIR] [--profiles N]" >&2; exit 2; }
server_a=$2
shift 2
build=build
if [[ $# -gt 0 && "$1" != --* ]]; then build=$1; shift; fi
work=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
start() {  # $1: name, $2: binary, then flags of that server
  local name=$1 binary=$2
  shift 2
  "$binary" --grpc_addr=127.0.0.1:0 --http_addr=127.0.0.1:0 --data_dir="$work/$name" \
    --ready_file="$work/$name.ready" --log_level=warn "$@" &
  pids+=($!)
  for _ in $(seq 100); do [[ -f "$work/$name.ready" ]] && break; sleep 0.1; done
}
field() { sed -E "s/.*\"$2\":\"([^\"]+)\".*/\1/" "$work/$1.ready"; }
start a "$server_a"
# FLEETPROF_B_FLAGS: extra flags of server B (e.g. --http_threads=16).
start b "$build/bin/fleetprof-server" ${FLEETPROF_B_FLAGS:-}
"$build/bin/http_api_bench" --http "$(field a http)" --grpc "$(field a grpc)" \
  --http_b "$(field b http)" --grpc_b "$(field b grpc)" --work_dir "$work" \
  --trace ../shared/corpus/kineto/v100_resnet_rank0.pt.trace.json.gz --profiles 1000 "$@"
