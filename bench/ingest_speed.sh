#!/usr/bin/env bash
# Upload + index speed against `fleetprof analyze` of the same file, in one run, alternated.
#   bench/ingest_speed.sh [--size_mb 54] [--runs 7] [--concurrent 4] [--perf OUT.txt] [BUILD_DIR]
# Generates a plain Kineto JSON of about SIZE_MB from the corpus's V100 trace (reused under
# $TMPDIR/fleetprof_bench), starts a fresh server, then runs RUNS rounds of: analyze, upload
# (a new upload id each time). Prints medians, MB/s and upload/analyze as a speed ratio; then
# CONCURRENT uploads at once against one alone (total MB/s and server CPU-seconds per GB).
# With --perf, `perf record` samples the server during the single uploads and the top of
# `perf report` goes to OUT.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
size_mb=54 runs=7 concurrent=4 perf_out="" build=build
while [[ $# -gt 0 ]]; do
  case $1 in
    --size_mb) size_mb=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --concurrent) concurrent=$2; shift 2 ;;
    --perf) perf_out=$2; shift 2 ;;
    *) build=$1; shift ;;
  esac
done
bin=$PWD/$build/bin
corpus=${FLEETPROF_CORPUS:-$PWD/../shared/corpus}
cache=${TMPDIR:-/tmp}/fleetprof_bench
mkdir -p "$cache"
trace=$cache/ingest_${size_mb}mb.pt.trace.json
if [[ ! -s $trace ]]; then
  /usr/bin/python3 bench/gen_kineto_trace.py "$trace" --size-mb "$size_mb" \
    --from "$corpus/kineto/v100_resnet_rank0.pt.trace.json.gz" >/dev/null
fi
bytes=$(stat -c %s "$trace")
work=$(mktemp -d /tmp/fleetprof-ingest-speed-XXXXXX)
server=""
trap '[[ -n $server ]] && kill $server 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
"$bin/fleetprof-server" --grpc_addr=127.0.0.1:0 --http_addr=127.0.0.1:0 --data_dir="$work/db" \
  --ready_file="$work/ready" --log_level=debug 2>"$work/server.log" &
server=$!
for _ in $(seq 400); do [[ -f $work/ready ]] && break; sleep 0.05; done
addr=$(sed -E 's/.*"grpc":"([^"]+)".*/\1/' "$work/ready")
cat "$trace" >/dev/null  # in the page cache for both sides

now() { date +%s.%N; }
server_cpu() { awk '{print $14 + $15}' /proc/$server/stat; }  # utime + stime, clock ticks
ticks=$(getconf CLK_TCK)
analyze_t=() upload_t=()
[[ -n $perf_out ]] && { perf record -F 999 -g -p "$server" -o "$work/perf.data" 2>/dev/null & perf_pid=$!; sleep 0.5; }
for i in $(seq "$runs"); do
  t0=$(now); "$bin/fleetprof" analyze "$trace" --json >/dev/null; t1=$(now)
  "$bin/fleetprof" upload "$trace" --job bench --server "$addr" --upload_id "speed-$i-$RANDOM" >/dev/null; t2=$(now)
  analyze_t+=("$(echo "$t1 - $t0" | bc -l)") upload_t+=("$(echo "$t2 - $t1" | bc -l)")
done
if [[ -n $perf_out ]]; then
  kill -INT $perf_pid; wait $perf_pid 2>/dev/null || true
  perf report -i "$work/perf.data" --no-children --percent-limit 1 --stdio 2>/dev/null | grep -v '^$' | head -150 >"$perf_out"
  echo "perf profile of the server during the single uploads: $perf_out"
fi
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
a=$(median "${analyze_t[@]}") u=$(median "${upload_t[@]}")
awk -v b="$bytes" -v a="$a" -v u="$u" -v n="$runs" 'BEGIN {
  printf "file %.1f MB, %d rounds alternated\n", b/1e6, n
  printf "  analyze        median %6.0f ms  %6.0f MB/s\n", a*1000, b/1e6/a
  printf "  upload+index   median %6.0f ms  %6.0f MB/s  speed = %.2f of analyze\n", u*1000, b/1e6/u, a/u
}'
# The server's own account of each upload (upload_session.cc, at --log_level=debug).
phase() { grep -o "$1=[0-9.]*" "$work/server.log" | head -n "$runs" | cut -d= -f2; }
awk -v r="$(median $(phase receive_s))" -v a="$(median $(phase analysis_after_stream_s))" \
    -v c="$(median $(phase commit_s))" 'BEGIN {
  printf "  server phases  median: receive+store+analyse %.0f ms, analysis after the last chunk %.0f ms, commit %.0f ms\n",
    r*1000, a*1000, c*1000
}'

# One upload alone, then CONCURRENT at once: total throughput and the server's CPU per GB. First
# the flushes and compactions the rounds above set off finish (the server's CPU stops moving for
# half a second, 20 s at most), or the one upload's CPU would include theirs.
settle() {
  local prev cur
  prev=$(server_cpu)
  for _ in $(seq 40); do
    sleep 0.5
    cur=$(server_cpu)
    (( cur - prev <= 1 )) && return 0
    prev=$cur
  done
}
settle
one_cpu0=$(server_cpu); t0=$(now)
"$bin/fleetprof" upload "$trace" --job bench --server "$addr" --upload_id "one-$RANDOM" >/dev/null
t1=$(now); sleep 3; one_cpu1=$(server_cpu)
pids=()
for i in $(seq "$concurrent"); do
  "$bin/fleetprof" upload "$trace" --job bench --server "$addr" --upload_id "many-$i-$RANDOM" >/dev/null &
  pids+=($!)
done
many_cpu0=$one_cpu1; t2=$(now)
wait "${pids[@]}"
t3=$(now); sleep 3; many_cpu1=$(server_cpu)  # with the flushes and compactions they set off
uploads=$((runs + 1 + concurrent))
kill -TERM "$server"; wait "$server" 2>/dev/null || true; server=""  # a graceful stop flushes
disk=$(du -sb "$work/db" | cut -f1)
awk -v b="$bytes" -v n="$concurrent" -v t1="$(echo "$t1 - $t0" | bc -l)" -v tn="$(echo "$t3 - $t2" | bc -l)" \
    -v c1="$((one_cpu1 - one_cpu0))" -v cn="$((many_cpu1 - many_cpu0))" -v hz="$ticks" 'BEGIN {
  g = b / 1e9
  printf "  1 upload       %6.0f MB/s  server CPU %.1f s/GB\n", b/1e6/t1, c1/hz/g
  printf "  %d at once      %6.0f MB/s in all (%.2f of one)  server CPU %.1f s/GB (%.2f of one)\n",
    n, n*b/1e6/tn, (n*b/tn)/(b/t1), cn/hz/(n*g), (cn/(n*g))/(c1/g)
}'
awk -v d="$disk" -v u="$uploads" -v b="$bytes" 'BEGIN {
  printf "  disk after a flush: %.1f MB for %d uploads of %.1f MB = %.3f of what was uploaded\n", d/1e6, u, b/1e6, d/(u*b)
}'
