#!/usr/bin/env bash
# The trace viewer at scale: a generated Kineto trace of about EVENTS events (default 10M).
#   bench/trace_viewer.sh [EVENTS]   (needs build/bin, incl. trace_window_bench, and chromium)
# Prints: file size; server peak RSS during ingest against the file size; event-store and raw
# bytes on disk; trace-window p50/p99 (full zoom-out and 1 ms windows) beside a /healthz
# floor; the viewer's first view in headless Chromium.
set -euo pipefail
cd "$(dirname "$0")/.."
events=${1:-10000000}
bin=$PWD/build/bin
work=$(mktemp -d /tmp/fleetprof-viewer-XXXXXX)
server=
trap '[[ -n $server ]] && kill $server 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT

# The v100 corpus trace has 68,692 events in 15.4 MB: repeat it to reach the event count.
size_mb=$(( (events + 68691) / 68692 * 15377659 / 1048576 + 1 ))
trace=$work/big.pt.trace.json
/usr/bin/python3 bench/gen_kineto_trace.py "$trace" --size-mb "$size_mb" >/dev/null
bytes=$(stat -c %s "$trace")

start_server() {
  rm -f "$work/ready"
  "$bin/fleetprof-server" --grpc_addr=127.0.0.1:0 --http_addr=127.0.0.1:0 \
    --data_dir="$work/db" --ready_file="$work/ready" --log_level=warn &
  server=$!
  for _ in $(seq 600); do [[ -f $work/ready ]] && break; sleep 0.05; done
  grpc=$(sed -E 's/.*"grpc":"([^"]+)".*/\1/' "$work/ready")
  http=$(sed -E 's/.*"http":"([^"]+)".*/\1/' "$work/ready")
}
kb() { awk -v k="$1" '$1 == k":" {print $2}' /proc/$server/status; }

start_server
before=$(kb VmRSS)
t0=$(date +%s.%N)
id=$("$bin/fleetprof" upload "$trace" --job bench --server "$grpc" --json --timeout_s 3600 |
     sed -E 's/.*"profile_id":"([^"]+)".*/\1/')
t1=$(date +%s.%N)
peak=$(kb VmHWM)
stored_events=$(curl -s "http://$http/api/v1/profiles/$id" | sed -E 's/.*"events":([0-9]+).*/\1/' | head -1)
awk -v b="$bytes" -v r0="$before" -v hwm="$peak" -v t0="$t0" -v t1="$t1" -v n="$stored_events" 'BEGIN {
  printf "file %.1f MB, %d events read; server RSS before %.1f MB, peak %.1f MB = %.3f of the file; upload+analysis+event store %.1f s (%.0f MB/s)\n",
    b/1e6, n, r0/1024, hwm/1024, hwm*1024/b, t1-t0, b/1e6/(t1-t0)
}'
# Restart: the shutdown flushes every memtable, so table-file sizes are the whole store.
kill -TERM $server; wait $server || true
start_server
sleep 6  # the storage gauges refresh every 5 s
curl -s "http://$http/metrics" | awk -v b="$bytes" '
  /^fleetprof_server_storage_part_bytes\{part="events"\}/ { ev = $2 }
  /^fleetprof_server_storage_part_bytes\{part="raw"\}/ { raw = $2 }
  END { printf "on disk: event store %.1f MB (%.3f of the raw file), uploaded file %.1f MB (zstd, %.3f)\n",
        ev/1e6, ev/b, raw/1e6, raw/b }'
"$bin/trace_window_bench" --http "$http" --profile "$id" --queries 400
/usr/bin/python3 bench/viewer_first_view.py --url "http://$http" --profile-id "$id" --screenshot-dir "$work"
cp "$work/trace_10m_first_view.png" /tmp/ 2>/dev/null || true
