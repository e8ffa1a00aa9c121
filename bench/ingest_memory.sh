#!/usr/bin/env bash
# Measures how much a large upload raises fleetprof-server's peak resident memory.
#   bench/ingest_memory.sh [SIZE_MB]   (default 1024; needs build/bin and bench/gen_kineto_trace.py)
# Prints the file size, the server's RSS before, its peak (VmHWM) after, and the ratio of the
# increase to the file size (issue 22's goal: at most 0.25), then `fleetprof analyze`'s own peak
# on the same file for comparison.
set -euo pipefail
cd "$(dirname "$0")/.."
size_mb=${1:-1024}
bin=$PWD/build/bin
work=$(mktemp -d /tmp/fleetprof-ingest-XXXXXX)
trap 'kill $server 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT

trace=$work/big.pt.trace.json
/usr/bin/python3 bench/gen_kineto_trace.py "$trace" --size-mb "$size_mb" >/dev/null
bytes=$(stat -c %s "$trace")

"$bin/fleetprof-server" --grpc_addr=127.0.0.1:0 --http_addr=127.0.0.1:0 \
  --data_dir="$work/db" --ready_file="$work/ready" --log_level=warn &
server=$!
for _ in $(seq 200); do [[ -f $work/ready ]] && break; sleep 0.05; done
addr=$(sed -E 's/.*"grpc":"([^"]+)".*/\1/' "$work/ready")
kb() { awk -v k="$1" '$1 == k":" {print $2}' /proc/$server/status; }
before=$(kb VmRSS)
start=$(date +%s.%N)
"$bin/fleetprof" upload "$trace" --job bench --server "$addr" --json
end=$(date +%s.%N)
peak=$(kb VmHWM)
awk -v b="$bytes" -v r0="$before" -v hwm="$peak" -v t0="$start" -v t1="$end" 'BEGIN {
  inc = (hwm - r0) * 1024
  printf "file %.1f MB  server RSS before %.1f MB  peak %.1f MB  increase %.1f MB = %.3f of the file  upload+index %.1f s (%.0f MB/s)\n",
    b/1e6, r0/1024, hwm/1024, inc/1e6, inc/b, t1-t0, b/1e6/(t1-t0)
}'
analyze_kb=$( { /usr/bin/time -f '%M' "$bin/fleetprof" analyze "$trace" --json >/dev/null; } 2>&1 | tail -1)
awk -v k="$analyze_kb" -v b="$bytes" 'BEGIN { printf "fleetprof analyze of the same file: peak RSS %.1f MB = %.3f of the file\n", k/1024, k*1024/b }'
