#!/usr/bin/env bash
# Load test of fleetprof-server on loopback: 500 simulated agents (heartbeats with 8 device
# samples and 4 targets), 16 concurrent uploads of a corpus trace in a loop and 50 queries/s
# for 2 minutes; prints errors, query p50/p99, the server's threads and RSS, and the memory an
# agent costs, projected to 10,000 agents.
#   bench/load.sh [BUILD_DIR] [load_bench flags: --agents N --uploads N --qps N --seconds N]
# $FLEETPROF_SERVER_FLAGS adds server flags (e.g. --upload_idle_timeout_s=2). Every simulated
# agent and uploader connects from 127.0.0.1, so --max_uploads_per_peer (8 by default, per host)
# is raised to 64: in a fleet, 16 uploads come from 16 hosts.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true
bin=$build/bin
trace=${FLEETPROF_SHARED_DIR:-../shared}/corpus/kineto/v100_resnet_rank0.pt.trace.json.gz
[[ -f "$trace" ]] || { echo "load: $trace is missing" >&2; exit 1; }
work=$(mktemp -d /tmp/fleetprof-load.XXXXXX)
trap 'kill $server 2>/dev/null || true; wait $server 2>/dev/null || true; rm -rf "$work"' EXIT
"$bin/fleetprof-server" --grpc_addr=127.0.0.1:0 --http_addr=127.0.0.1:0 --data_dir="$work/data" \
  --ready_file="$work/ready" --log_level=warn --max_agents=20000 --max_disk_mb=2048 \
  --max_uploads_per_peer=64 ${FLEETPROF_SERVER_FLAGS:-} &
server=$!
for _ in $(seq 200); do [[ -s "$work/ready" ]] && break; sleep 0.05; done
grpc=$(sed -E 's/.*"grpc":"([^"]+)".*/\1/' "$work/ready")
"$bin/load_bench" --server "$grpc" --server_pid "$server" --trace "$trace" "$@"
