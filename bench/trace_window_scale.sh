#!/usr/bin/env bash
# Trace windows that do not grow with the trace (issue 43, item 2): a 1M- and a 10M-event
# generated Kineto trace, side by side in one run. For each: a fresh fleetprof-server
# (--max_trace_events=12000000), the upload (its time and the server's peak RSS), the first
# whole view counted from the upload's reply, then trace_window_bench's p50/p99 of --queries
# whole views and random 1 ms windows after --warmup of each.
#   bench/trace_window_scale.sh [BUILD_DIR] [--small 1000000] [--large 10000000] [--queries 200]
#                               [--warmup 5] [--work DIR]
# The traces are written under --work (default /tmp/fleetprof-window-scale, never the repo) and
# reused by later runs: the 10M one is about 2 GB of JSON. The data folders are removed at exit.
set -euo pipefail
shopt -s inherit_errexit  # a failed upload or query inside $(measure ...) stops the run
cd "$(dirname "$0")/.."
build=build
if [[ $# -gt 0 && "$1" != --* ]]; then build=$1; shift; fi
small=1000000 large=10000000 queries=200 warmup=5 work=/tmp/fleetprof-window-scale
while [[ $# -gt 0 ]]; do
  case $1 in
    --small) small=$2 ;;
    --large) large=$2 ;;
    --queries) queries=$2 ;;
    --warmup) warmup=$2 ;;
    --work) work=$2 ;;
    *) echo "unknown flag $1" >&2; exit 2 ;;
  esac
  shift 2
done
bin=$(realpath "$build")/bin
for b in fleetprof-server fleetprof trace_window_bench; do
  [[ -x $bin/$b ]] || { echo "missing $bin/$b (cmake --build $build --target $b)" >&2; exit 1; }
done
mkdir -p "$work"
server=
trap '[[ -n $server ]] && kill "$server" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"/db-* "$work"/ready-*' EXIT

# The v100 corpus trace: 68,692 events per repetition, about 13.6 MB of generated JSON each.
per_rep_events=68692 per_rep_bytes=13700000
trace_for() {  # $1: events -> prints the trace's path, generating it once
  local reps=$(( ($1 + per_rep_events - 1) / per_rep_events ))
  local path=$work/kineto_${reps}x.pt.trace.json
  if [[ ! -s $path ]]; then
    local need_kb=$(( reps * per_rep_bytes / 1024 * 3 / 2 ))  # the file, plus the event store and raw copy
    local free_kb
    free_kb=$(df -Pk "$work" | awk 'NR == 2 {print $4}')
    (( free_kb > need_kb )) || { echo "$work: $((free_kb / 1024)) MiB free, need $((need_kb / 1024))" >&2; exit 1; }
    /usr/bin/python3 bench/gen_kineto_trace.py "$path" --repetitions "$reps" >&2
  fi
  echo "$path"
}

kb() { awk -v k="$1" '$1 == k":" {print $2}' "/proc/$server/status"; }
now_ns() { date +%s%N; }

# One trace through a fresh server. Prints "key=value ..." for the table.
measure() {  # $1: name, $2: trace
  local db=$work/db-$1 ready=$work/ready-$1
  rm -rf "$db" "$ready"
  "$bin/fleetprof-server" --grpc_addr=127.0.0.1:0 --http_addr=127.0.0.1:0 --data_dir="$db" \
    --ready_file="$ready" --log_level=warn --max_trace_events=12000000 >&2 &
  server=$!
  trap 'kill "$server" 2>/dev/null || true' EXIT  # measure runs in $(...): its own trap
  for _ in $(seq 600); do [[ -s $ready ]] && break; sleep 0.05; done
  local grpc http
  grpc=$(sed -E 's/.*"grpc":"([^"]+)".*/\1/' "$ready")
  http=$(sed -E 's/.*"http":"([^"]+)".*/\1/' "$ready")
  local rss_before t0 reply id
  rss_before=$(kb VmRSS)
  t0=$(now_ns)
  id=$("$bin/fleetprof" upload "$2" --job bench --server "$grpc" --json --timeout_s 3600 |
       sed -E 's/.*"profile_id":"([^"]+)".*/\1/')
  reply=$(now_ns)
  local hwm
  hwm=$(kb VmHWM)
  local result
  result=$("$bin/trace_window_bench" --http "$http" --profile "$id" --queries "$queries" --warmup "$warmup" \
           --first_after_unix_ns "$reply" | tee /dev/stderr | sed -n 's/^RESULT //p')
  local events
  events=$(curl -s "http://$http/api/v1/profiles/$id" | grep -o '"events":[0-9]*' | head -1 | cut -d: -f2)
  kill -TERM "$server"; wait "$server" || true
  server=
  echo "events=$events bytes=$(stat -L -c %s "$2") upload_s=$(awk -v a="$t0" -v b="$reply" 'BEGIN {printf "%.2f", (b - a) / 1e9}') rss_before_mb=$((rss_before / 1024)) rss_peak_mb=$((hwm / 1024)) $result"
}

small_trace=$(trace_for "$small")
large_trace=$(trace_for "$large")
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
echo "== $small_trace" >&2
row_small=$(measure small "$small_trace")
echo "== $large_trace" >&2
row_large=$(measure large "$large_trace")
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

echo "load average before: $load_before, after: $load_after ($(nproc) cores)"
awk -v a="$row_small" -v b="$row_large" -v q="$queries" -v w="$warmup" 'BEGIN {
  n = split(a, pa, " "); for (i = 1; i <= n; i++) { split(pa[i], kv, "="); A[kv[1]] = kv[2] }
  n = split(b, pb, " "); for (i = 1; i <= n; i++) { split(pb[i], kv, "="); B[kv[1]] = kv[2] }
  printf "%-52s %16s %16s %8s\n", "", sprintf("%.2fM events", A["events"] / 1e6), sprintf("%.2fM events", B["events"] / 1e6), "ratio"
  printf "%-52s %16.0f %16.0f %8.2f\n", "file, MB", A["bytes"] / 1e6, B["bytes"] / 1e6, B["bytes"] / A["bytes"]
  printf "%-52s %16.2f %16.2f %8.2f\n", "upload until its reply, s", A["upload_s"], B["upload_s"], B["upload_s"] / A["upload_s"]
  printf "%-52s %16s %16s\n", "server RSS before / peak, MB", A["rss_before_mb"] " / " A["rss_peak_mb"], B["rss_before_mb"] " / " B["rss_peak_mb"]
  printf "%-52s %16.2f %16.2f %8.2f\n", "first whole view from the upload reply, ms (< 300)", A["first_ms"], B["first_ms"], B["first_ms"] / A["first_ms"]
  printf "%-52s %16s %16s\n", sprintf("after %d warm-ups, %d queries each, p50 / p99 ms:", w, q), "", ""
  printf "%-52s %16s %16s %8.2f\n", "  whole view (p99 < 2)", A["whole_p50"] " / " A["whole_p99"], B["whole_p50"] " / " B["whole_p99"], B["whole_p99"] / A["whole_p99"]
  printf "%-52s %16s %16s %8.2f\n", "  random 1 ms windows (p99 < 1)", A["ms1_p50"] " / " A["ms1_p99"], B["ms1_p50"] " / " B["ms1_p99"], B["ms1_p99"] / A["ms1_p99"]
  printf "%-52s %16s %16s %8.2f\n", "  random 1 ms windows, resolution 1 ns", A["exact_p50"] " / " A["exact_p99"], B["exact_p50"] " / " B["exact_p99"], B["exact_p99"] / A["exact_p99"]
  printf "%-52s %16s %16s\n", "  GET /healthz (floor)", A["healthz_p50"] " / " A["healthz_p99"], B["healthz_p50"] " / " B["healthz_p99"]
  printf "%-52s %16d %16d %8.2f\n", "  median answer, whole view, bytes", A["whole_bytes"], B["whole_bytes"], B["whole_bytes"] / A["whole_bytes"]
  printf "%-52s %16d %16d %8.2f\n", "  median answer, 1 ms window, bytes", A["ms1_bytes"], B["ms1_bytes"], B["ms1_bytes"] / A["ms1_bytes"]
}'
