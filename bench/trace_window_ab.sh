#!/usr/bin/env bash
# Trace windows of another build's server (A, e.g. a copy of main's bin/fleetprof-server) and
# of this build's (B) on the same stored profile, alternated in one run: rounds of
# trace_window_bench against A then B (B then A in every other round, so neither always
# runs first), then the median over rounds of each case's p50 and p99, and B/A.
#   bench/trace_window_ab.sh --server_a PATH [BUILD_DIR] [--events 3000000] [--rounds 10]
#                            [--queries 400] [--trace FILE] [--work DIR]
# --trace reuses a generated Kineto trace; --work keeps the data folders (and reuses them
# when they are there: a.ready/b.ready are rewritten, the profile id is kept in DIR/id).
set -euo pipefail
cd "$(dirname "$0")/.."
[[ "${1:-}" == "--server_a" ]] || { echo "usage: $0 --server_a PATH [BUILD_DIR] [--events N] [--rounds R] [--queries Q] [--trace FILE] [--work DIR]" >&2; exit 2; }
server_a=$2
shift 2
build=build
if [[ $# -gt 0 && "$1" != --* ]]; then build=$1; shift; fi
events=3000000 rounds=10 queries=400 trace= work=
while [[ $# -gt 0 ]]; do
  case $1 in
    --events) events=$2 ;;
    --rounds) rounds=$2 ;;
    --queries) queries=$2 ;;
    --trace) trace=$2 ;;
    --work) work=$2 ;;
    *) echo "unknown flag $1" >&2; exit 2 ;;
  esac
  shift 2
done
keep=1
[[ -z $work ]] && { work=$(mktemp -d /tmp/fleetprof-window-ab-XXXXXX); keep=0; }
mkdir -p "$work"
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; [[ $keep == 1 ]] || rm -rf "$work"' EXIT

start() {  # $1: name (data folder $work/$1), $2: binary
  rm -f "$work/$1.ready"
  "$2" --grpc_addr=127.0.0.1:0 --http_addr=127.0.0.1:0 --data_dir="$work/$1" \
    --ready_file="$work/$1.ready" --log_level=warn &
  pids+=($!)
  for _ in $(seq 600); do [[ -f "$work/$1.ready" ]] && break; sleep 0.05; done
}
field() { sed -E "s/.*\"$2\":\"([^\"]+)\".*/\1/" "$work/$1.ready"; }

if [[ ! -f $work/id ]]; then
  if [[ -z $trace ]]; then
    # As bench/trace_viewer.sh: the v100 corpus trace (68,692 events in 15.4 MB) repeated.
    trace=$work/big.pt.trace.json
    /usr/bin/python3 bench/gen_kineto_trace.py "$trace" --size-mb $(( (events + 68691) / 68692 * 15377659 / 1048576 + 1 )) >/dev/null
  fi
  start b "$build/bin/fleetprof-server"
  "$build/bin/fleetprof" upload "$trace" --job bench --server "$(field b grpc)" --json --timeout_s 3600 |
    sed -E 's/.*"profile_id":"([^"]+)".*/\1/' >"$work/id"
  kill -TERM "${pids[-1]}"; wait "${pids[-1]}" || true  # the shutdown flushes the memtables
  unset 'pids[-1]'
  rm -rf "$work/a" && cp -a "$work/b" "$work/a"
fi
id=$(cat "$work/id")
start a "$server_a"
start b "$build/bin/fleetprof-server"

rm -f "$work/rounds.txt"
for round in $(seq "$rounds"); do
  order="a b"
  (( round % 2 == 0 )) && order="b a"
  for s in $order; do
    "$build/bin/trace_window_bench" --http "$(field $s http)" --profile "$id" --queries "$queries" |
      sed -n "s/^  \(.*\)  *p50 *\([0-9.]*\) ms  p99 *\([0-9.]*\) ms.*/$s $round|\1|\2|\3/p" | tee -a "$work/rounds.txt"
  done
done
echo "median over $rounds rounds of $queries queries per case (A: $server_a, B: $build/bin/fleetprof-server):"
awk -F'|' '
  { split($1, sr, " "); k = $2; sub(/ +$/, "", k); n[sr[1] k]++; p50[sr[1] k, n[sr[1] k]] = $3; p99[sr[1] k, n[sr[1] k]] = $4
    if (!(k in seen)) { seen[k] = 1; order[++cases] = k } }
  function median(arr, key, cnt,   i, j, t, v) {
    for (i = 1; i <= cnt; i++) v[i] = arr[key, i] + 0
    for (i = 2; i <= cnt; i++) { t = v[i]; for (j = i - 1; j >= 1 && v[j] > t; j--) v[j + 1] = v[j]; v[j + 1] = t }
    return cnt % 2 ? v[(cnt + 1) / 2] : (v[cnt / 2] + v[cnt / 2 + 1]) / 2
  }
  END {
    printf "  %-44s %9s %9s %9s %9s %7s %7s\n", "case", "A p50", "A p99", "B p50", "B p99", "B/A p50", "B/A p99"
    for (c = 1; c <= cases; c++) {
      k = order[c]; a50 = median(p50, "a" k, n["a" k]); a99 = median(p99, "a" k, n["a" k])
      b50 = median(p50, "b" k, n["b" k]); b99 = median(p99, "b" k, n["b" k])
      printf "  %-44s %9.3f %9.3f %9.3f %9.3f %7.2f %7.2f\n", k, a50, a99, b50, b99, b50 / a50, b99 / a99
    }
  }' "$work/rounds.txt"
rm -f "$work/rounds.txt"
