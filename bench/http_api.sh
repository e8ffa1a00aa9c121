#!/usr/bin/env bash
# HTTP API latency: starts a fleetprof-server on free loopback ports over a fresh data folder,
# runs http_api_bench against it (see bench/http_api_bench.cc), stops it.
#   bench/http_api.sh [BUILD_DIR] [--profiles N]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true
work=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
"$build/bin/fleetprof-server" --grpc_addr=127.0.0.1:0 --http_addr=127.0.0.1:0 --data_dir="$work/data" \
  --ready_file="$work/ready" --log_level=warn &
server=$!
for _ in $(seq 100); do [[ -f "$work/ready" ]] && break; sleep 0.1; done
grpc=$(sed -E 's/.*"grpc":"([^"]+)".*/\1/' "$work/ready")
http=$(sed -E 's/.*"http":"([^"]+)".*/\1/' "$work/ready")
"$build/bin/http_api_bench" --http "$http" --grpc "$grpc" --work_dir "$work" \
  --trace ../shared/corpus/kineto/v100_resnet_rank0.pt.trace.json.gz "$@"
