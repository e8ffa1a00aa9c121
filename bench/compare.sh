#!/usr/bin/env bash
# Diff and job-view latency: a fresh fleetprof-server on free loopback ports; two ~200k-event
# Kineto profiles (real corpus traces repeated by gen_kineto_trace.py) for the diff, and
# --profiles N (default 1000) uploads of a small real trace (MI250, 220 events) as one job.
#   bench/compare.sh [BUILD_DIR] [--profiles N]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true
work=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
corpus=../shared/corpus/kineto
/usr/bin/python3 bench/gen_kineto_trace.py "$work/a.json" --size-mb 38 --from "$corpus/v100_resnet_rank0.pt.trace.json.gz"
/usr/bin/python3 bench/gen_kineto_trace.py "$work/b.json" --size-mb 43 --from "$corpus/a100_nccl_rank0.json.gz"
"$build/bin/fleetprof-server" --grpc_addr=127.0.0.1:0 --http_addr=127.0.0.1:0 --data_dir="$work/data" \
  --ready_file="$work/ready" --log_level=warn &
server=$!
for _ in $(seq 100); do [[ -f "$work/ready" ]] && break; sleep 0.1; done
grpc=$(sed -E 's/.*"grpc":"([^"]+)".*/\1/' "$work/ready")
http=$(sed -E 's/.*"http":"([^"]+)".*/\1/' "$work/ready")
for f in a b; do echo "$f.json: $("$build/bin/fleetprof" analyze "$work/$f.json" --json | grep -o '"events":[0-9]*' | tail -1)"; done
"$build/bin/http_api_bench" --http "$http" --grpc "$grpc" --work_dir "$work" --profiles 1000 \
  --diff_a "$work/a.json" --diff_b "$work/b.json" --job_trace "$corpus/mi250_rocm62.json.gz" "$@"
