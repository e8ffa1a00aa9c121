#!/usr/bin/env bash
# Pyroscope's query API (Connect) on a job of N profiles (default 1,000 copies of the corpus's
# a100_alexnet, 25 KB gz, uploaded by 2 CLI processes at once) against a fresh fleetprof-server:
# SelectMergeStacktraces of the job and of one profile, SelectSeries, and the HTTP job flame
# graph route for comparison (bench/connect_query.py prints median and p99).
#   bench/connect_query.sh [BUILD_DIR] [--profiles N] [--iterations N] [--trace FILE]
set -euo pipefail
cd "$(dirname "$0")/.."
build=build
if [[ $# -gt 0 && $1 != --* ]]; then build=$1; shift; fi
profiles=1000
iterations=100
trace=../shared/corpus/kineto/a100_alexnet.json.gz
while [[ $# -gt 0 ]]; do
  case $1 in
    --profiles) profiles=$2; shift 2 ;;
    --iterations) iterations=$2; shift 2 ;;
    --trace) trace=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
work=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
"$build/bin/fleetprof-server" --grpc_addr=127.0.0.1:0 --http_addr=127.0.0.1:0 --data_dir="$work/data" \
  --ready_file="$work/ready" --log_level=warn &
server=$!
for _ in $(seq 100); do [[ -f "$work/ready" ]] && break; sleep 0.1; done
grpc=$(sed -E 's/.*"grpc":"([^"]+)".*/\1/' "$work/ready")
http=$(sed -E 's/.*"http":"([^"]+)".*/\1/' "$work/ready")
start=$(date +%s.%N)
seq "$profiles" | xargs -P 2 -I{} sh -c \
  "\"$build/bin/fleetprof\" upload \"$trace\" --job bench --node node\$(({} % 8)) --server \"$grpc\" >/dev/null"
echo "uploaded $profiles profiles in $(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN {printf "%.1f", e-s}') s"
id=$("$build/bin/fleetprof" upload "$trace" --job one --server "$grpc" --json | sed -E 's/.*"profile_id":"([^"]+)".*/\1/')
echo "Connect over HTTP ($http): job bench ($profiles profiles of $(basename "$trace")), profile $id (job one):"
/usr/bin/python3 bench/connect_query.py --url "http://$http" --job bench --profile "$id" --iterations "$iterations"
