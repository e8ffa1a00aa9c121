#!/usr/bin/env bash
# What token checks cost: two fleetprof-servers with the same data, A without authentication
# and B with --auth_tokens_file (every request carries a token), measured by
# bench/http_api_bench.cc in alternating batches in one run; prints p50/p99 of each and B/A.
#   bench/auth_overhead.sh [BUILD_DIR] [--profiles N]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true
work=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
token=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
printf '%s read,ingest bench\n' "$(printf '%s' "$token" | sha256sum | cut -d' ' -f1)" > "$work/tokens"
start() {  # $1: name, then extra server flags
  local name=$1
  shift
  "$build/bin/fleetprof-server" --grpc_addr=127.0.0.1:0 --http_addr=127.0.0.1:0 --data_dir="$work/$name" \
    --ready_file="$work/$name.ready" --log_level=warn "$@" &
  pids+=($!)
  for _ in $(seq 100); do [[ -f "$work/$name.ready" ]] && break; sleep 0.1; done
}
field() { sed -E "s/.*\"$2\":\"([^\"]+)\".*/\1/" "$work/$1.ready"; }
start off
start on --auth_tokens_file="$work/tokens"
"$build/bin/http_api_bench" --http "$(field off http)" --grpc "$(field off grpc)" \
  --http_b "$(field on http)" --grpc_b "$(field on grpc)" --token_b "$token" --work_dir "$work" \
  --trace ../shared/corpus/kineto/v100_resnet_rank0.pt.trace.json.gz --profiles 1000 "$@"
