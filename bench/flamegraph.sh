#!/usr/bin/env bash
# One profile's flame graph: in process (decode, render, JSON) and end to end over HTTP against a
# fresh fleetprof-server holding the corpus's largest Kineto trace (bench/flamegraph_bench.cc).
#   bench/flamegraph.sh [BUILD_DIR] [--iterations N]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true
trace=../shared/corpus/kineto/v100_resnet_rank0.pt.trace.json.gz
work=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
"$build/bin/flamegraph_bench" "$trace" "$@"
"$build/bin/fleetprof-server" --grpc_addr=127.0.0.1:0 --http_addr=127.0.0.1:0 --data_dir="$work/data" \
  --ready_file="$work/ready" --log_level=warn &
server=$!
for _ in $(seq 100); do [[ -f "$work/ready" ]] && break; sleep 0.1; done
grpc=$(sed -E 's/.*"grpc":"([^"]+)".*/\1/' "$work/ready")
http=$(sed -E 's/.*"http":"([^"]+)".*/\1/' "$work/ready")
id=$("$build/bin/fleetprof" upload "$trace" --job bench --server "$grpc" --json | sed -E 's/.*"profile_id":"([^"]+)".*/\1/')
echo "over HTTP ($http), profile $id:"
"$build/bin/flamegraph_bench" --http "$http" --profile "$id" "$@"
