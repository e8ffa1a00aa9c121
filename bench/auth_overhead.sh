#!/usr/bin/env bash
# What token checks cost: the HTTP API benchmark (bench/http_api_bench.cc) against a server
# without authentication and against one with --auth_tokens_file, in the same run; prints
# both and the with/without ratio of each p50 and p99.
#   bench/auth_overhead.sh [BUILD_DIR] [--profiles N]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true
work=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
token=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
printf '%s read,ingest bench\n' "$(printf '%s' "$token" | sha256sum | cut -d' ' -f1)" > "$work/tokens"
run() {  # $1: off|on
  local extra=() bench_extra=()
  if [[ $1 == on ]]; then extra=(--auth_tokens_file="$work/tokens"); bench_extra=(--token "$token"); fi
  rm -rf "$work/data" "$work/ready"
  "$build/bin/fleetprof-server" --grpc_addr=127.0.0.1:0 --http_addr=127.0.0.1:0 --data_dir="$work/data" \
    --ready_file="$work/ready" --log_level=warn "${extra[@]}" &
  server=$!
  for _ in $(seq 100); do [[ -f "$work/ready" ]] && break; sleep 0.1; done
  local grpc http
  grpc=$(sed -E 's/.*"grpc":"([^"]+)".*/\1/' "$work/ready")
  http=$(sed -E 's/.*"http":"([^"]+)".*/\1/' "$work/ready")
  "$build/bin/http_api_bench" --http "$http" --grpc "$grpc" --work_dir "$work" \
    --trace ../shared/corpus/kineto/v100_resnet_rank0.pt.trace.json.gz "${bench_extra[@]}" "$@" | grep GET \
    | sed "s/^/auth $1: /" | tee "$work/$1.txt"
  kill "$server"; wait "$server" || true
}
run off "$@"
run on "$@"
echo "ratio (tokens on / off):"
paste -d'\n' "$work/off.txt" "$work/on.txt" | awk '
  { for (i = 1; i <= NF; i++) { if ($i == "p50") p50 = $(i+1); if ($i == "p99") p99 = $(i+1); if ($i == "clients") c = $(i-1) } }
  NR % 2 == 1 { base50 = p50; base99 = p99; name = $0; sub(/^auth off: /, "", name); sub(/ +[0-9]+ clients.*/, "", name) }
  NR % 2 == 0 { printf "  %-44s %3d clients  p50 x%.3f  p99 x%.3f\n", name, c, p50 / base50, p99 / base99 }'
