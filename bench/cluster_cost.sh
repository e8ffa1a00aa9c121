#!/usr/bin/env bash
# What a cluster costs, measured on this machine with the real engines (one etcd member and
# s3rver share the cores with the replicas, so no scaling ratio is claimed):
#   1. CPU-seconds per GB ingested with 1 replica, then with 2 replicas taking uploads at once
#      (the ratio is the coordination tax: the goal is <= 1.1);
#   2. N small real profiles (corpus a100_alexnet, 25 KB gz) uploaded round robin through 3
#      replicas, then the job's ops view on each replica: its first (cold) call and the p50/p99
#      of 20 more, the object-store requests of the cold call, and each replica's memory;
#   3. one profile's ops view p99 over 20 profiles: cold (replica restarted with its cache
#      folder removed), disk-warm (restarted, cache kept), memory-warm (asked again);
#   4. object-store requests per upload and per query, priced at S3 Standard list prices
#      (us-east-1: PUT/LIST/multipart $0.005 per 1,000, GET/HEAD $0.0004 per 1,000) per 1M profiles.
#   bench/cluster_cost.sh [--profiles 1000] [--size_mb 54] [--runs 3] [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
profiles=1000 size_mb=54 runs=3 build=build
while [[ $# -gt 0 ]]; do
  case $1 in
    --profiles) profiles=$2; shift 2 ;;
    --size_mb) size_mb=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    *) build=$1; shift ;;
  esac
done
bin=$PWD/$build/bin
corpus=${FLEETPROF_CORPUS:-$PWD/../shared/corpus}
s3rver=${FLEETPROF_S3RVER:-/opt/fleetprof-test/node_modules/.bin/s3rver}
cache=${TMPDIR:-/tmp}/fleetprof_bench
mkdir -p "$cache"
trace=$cache/ingest_${size_mb}mb.pt.trace.json
if [[ ! -s $trace ]]; then
  /usr/bin/python3 bench/gen_kineto_trace.py "$trace" --size-mb "$size_mb" \
    --from "$corpus/kineto/v100_resnet_rank0.pt.trace.json.gz" >/dev/null
fi
small=$corpus/kineto/a100_alexnet.json.gz
bytes=$(stat -c %s "$trace")
work=$(mktemp -d /tmp/fleetprof-cluster-cost-XXXXXX)
etcd_dir=$(mktemp -d /dev/shm/fleetprof-cost-etcd-XXXXXX)
declare -A pid_of
pids=()
trap 'kill "${pids[@]}" "${pid_of[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$work" "$etcd_dir"' EXIT
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
ec=$(free_port) ep=$(free_port) sp=$(free_port)
etcd --name c --data-dir "$etcd_dir" --listen-client-urls "http://127.0.0.1:$ec" --advertise-client-urls "http://127.0.0.1:$ec" \
  --listen-peer-urls "http://127.0.0.1:$ep" --initial-advertise-peer-urls "http://127.0.0.1:$ep" \
  --initial-cluster "c=http://127.0.0.1:$ep" --quota-backend-bytes=$((4 << 30)) --log-level=error >"$work/etcd.log" 2>&1 &
pids+=($!)
NODE_OPTIONS=--openssl-legacy-provider "$s3rver" -d "$work/s3" -a 127.0.0.1 -p "$sp" --configure-bucket cost --silent \
  >"$work/s3rver.log" 2>&1 &
pids+=($!)
for _ in $(seq 200); do curl -sf "http://127.0.0.1:$ec/health" >/dev/null && curl -s "http://127.0.0.1:$sp" >/dev/null && break; sleep 0.1; done
printf '[default]\naws_access_key_id = S3RVER\naws_secret_access_key = S3RVER\n' >"$work/credentials"

start_replica() {  # NAME
  local name=$1
  rm -f "$work/$name.ready"
  "$bin/fleetprof-server" --grpc_addr=127.0.0.1:0 --http_addr=127.0.0.1:0 --data_dir="$work/$name" \
    --ready_file="$work/$name.ready" --log_level=warn --replica_id="$name" \
    --object_store=s3://cost/p --s3_endpoint="http://127.0.0.1:$sp" --s3_credentials_file="$work/credentials" \
    --etcd_endpoints="http://127.0.0.1:$ec" >>"$work/$name.log" 2>&1 &
  pid_of[$name]=$!
  for _ in $(seq 400); do [[ -f $work/$name.ready ]] && break; sleep 0.05; done
  [[ -f $work/$name.ready ]] || { echo "replica $name did not start:"; tail "$work/$name.log"; exit 1; }
}
stop_replica() { kill "${pid_of[$1]}"; wait "${pid_of[$1]}" 2>/dev/null || true; }
grpc() { sed -E 's/.*"grpc":"([^"]+)".*/\1/' "$work/$1.ready"; }
http() { sed -E 's/.*"http":"([^"]+)".*/\1/' "$work/$1.ready"; }
cpu() { awk '{print $14 + $15}' "/proc/${pid_of[$1]}/stat"; }
rss_mb() { awk '/^VmRSS/ {r=$2} /^VmHWM/ {h=$2} END {printf "%.0f MB (peak %.0f MB)", r/1024, h/1024}' "/proc/${pid_of[$1]}/status"; }
ticks=$(getconf CLK_TCK)
# Sum of a metric's series on a replica, optionally only those whose labels match a regex.
metric() { curl -s "http://$(http "$1")/metrics" | awk -v m="$2" -v l="${3:-}" \
  'index($1, m"{") == 1 && $1 ~ l {s += $2} END {print s+0}'; }
now() { date +%s.%N; }
# Seconds one HTTP GET takes (its body must not be an error).
timed_get() {
  curl -s -o "$work/body" -w '%{time_total}\n' "http://$1$2"
  if grep -q '"error"' "$work/body"; then echo "error from $2: $(head -c 300 "$work/body")" >&2; exit 1; fi
}
pct() {  # P VALUES...: the P-th percentile (nearest rank)
  local p=$1; shift
  printf '%s\n' "$@" | sort -g | awk -v p="$p" '{a[NR]=$1} END {i = int((p * NR + 99) / 100); if (i < 1) i = 1; print a[i]}'
}

start_replica a
start_replica b
start_replica c
cat "$trace" >/dev/null

echo "== 1. ingest CPU per GB: $runs uploads of a $(awk -v b="$bytes" 'BEGIN {printf "%.0f", b/1e6}') MB plain Kineto JSON"
a0=$(cpu a) b0=$(cpu b)
for _ in $(seq "$runs"); do "$bin/fleetprof" upload "$trace" --job ingest --server "$(grpc a)" >/dev/null; done
a1=$(cpu a) b1=$(cpu b)
one=$(awk -v c=$((a1 - a0 + b1 - b0)) -v t="$ticks" -v b="$bytes" -v n="$runs" 'BEGIN {print c / t / (b * n / 1e9)}')
t0=$(now)
for _ in $(seq "$runs"); do
  "$bin/fleetprof" upload "$trace" --job ingest --server "$(grpc a)" >/dev/null &
  first=$!
  "$bin/fleetprof" upload "$trace" --job ingest --server "$(grpc b)" >/dev/null
  wait "$first"
done
t1=$(now)
a2=$(cpu a) b2=$(cpu b)
two=$(awk -v c=$((a2 - a1 + b2 - b1)) -v t="$ticks" -v b="$bytes" -v n="$runs" 'BEGIN {print c / t / (b * 2 * n / 1e9)}')
awk -v o="$one" -v w="$two" 'BEGIN {printf "replica CPU s/GB: 1 replica %.2f, 2 replicas at once %.2f: ratio %.2f\n", o, w, w/o}'

echo "== 2. job view over $profiles profiles through 3 replicas"
put0=$(( $(metric a fleetprof_server_object_store_requests_total) + $(metric b fleetprof_server_object_store_requests_total) + $(metric c fleetprof_server_object_store_requests_total) ))
t0=$(now)
servers=("$(grpc a)" "$(grpc b)" "$(grpc c)")
seq "$profiles" | awk -v a="${servers[0]}" -v b="${servers[1]}" -v c="${servers[2]}" \
  '{s = ($1 % 3 == 0) ? a : ($1 % 3 == 1) ? b : c; print s}' |
  xargs -P 3 -I{} "$bin/fleetprof" upload "$small" --job scale --label "i=x" --server {} >/dev/null
t1=$(now)
put1=$(( $(metric a fleetprof_server_object_store_requests_total) + $(metric b fleetprof_server_object_store_requests_total) + $(metric c fleetprof_server_object_store_requests_total) ))
awk -v n="$profiles" -v s="$(echo "$t1 - $t0" | bc -l)" -v r=$((put1 - put0)) \
  'BEGIN {printf "uploaded %d profiles in %.1f s (%.0f/s, 3 CLI processes at once); %.1f object-store requests per upload\n", n, s, n/s, r/n}'
for r in a b c; do
  g0=$(metric "$r" fleetprof_server_object_store_requests_total 'op="(GET|HEAD)"')
  cold=$(timed_get "$(http "$r")" "/api/v1/jobs/scale/ops")
  g1=$(metric "$r" fleetprof_server_object_store_requests_total 'op="(GET|HEAD)"')
  warm=()
  for _ in $(seq 20); do warm+=("$(timed_get "$(http "$r")" "/api/v1/jobs/scale/ops")"); done
  printf 'replica %s: job ops first call %.3f s (%d object-store reads), then p50 %.1f ms p99 %.1f ms; memory %s\n' \
    "$r" "$cold" $((g1 - g0)) "$(echo "$(pct 50 "${warm[@]}") * 1000" | bc -l)" "$(echo "$(pct 99 "${warm[@]}") * 1000" | bc -l)" "$(rss_mb "$r")"
done

# etcd's share: the keys and values it keeps, and its database pages in use (history compacted
# by the leader, so nearly all of it is live), per profile and per GiB of its 2 GiB default quota.
n_profiles=$((profiles + 3 * runs))
etcd_kv=$(ETCDCTL_API=3 etcdctl --endpoints="http://127.0.0.1:$ec" get --prefix /fleetprof/ -w json 2>/dev/null |
  /usr/bin/python3 -c 'import base64, json, sys; d = json.load(sys.stdin); print(sum(len(base64.b64decode(k["key"])) + len(base64.b64decode(k.get("value", ""))) for k in d.get("kvs", [])))')
etcd_in_use=$(curl -s "http://127.0.0.1:$ec/metrics" | awk '$1 == "etcd_mvcc_db_total_size_in_use_in_bytes" {print $2 + 0}')
etcd_total=$(curl -s "http://127.0.0.1:$ec/metrics" | awk '$1 == "etcd_debugging_mvcc_db_total_size_in_bytes" || $1 == "etcd_mvcc_db_total_size_in_bytes" {v = $2} END {print v + 0}')
awk -v kv="$etcd_kv" -v u="$etcd_in_use" -v t="$etcd_total" -v n="$n_profiles" 'BEGIN {
  printf "etcd over %d profiles: %.0f bytes of keys+values per profile, %.0f bytes of database in use per profile (file %.1f MB): %.0f profiles per GiB of its quota\n",
    n, kv / n, u / n, t / 1e6, 2^30 / (u / n) }'

echo "== 3. one profile's ops view, 20 profiles"
ids=$("$bin/fleetprof" profiles --job scale --json --server "$(grpc c)" | grep -o '"profile_id":"[^"]*"' | awk -F'"' 'NR <= 20 {print $4}')  # all read: no SIGPIPE under pipefail
query_all() { local out=(); for id in $ids; do out+=("$(timed_get "$(http c)" "/api/v1/profiles/$id/ops")"); done; echo "${out[@]}"; }
stop_replica c; rm -rf "$work/c/object-cache"; start_replica c
g0=$(metric c fleetprof_server_object_store_requests_total 'op="(GET|HEAD)"')
read -ra cold <<<"$(query_all)"
g1=$(metric c fleetprof_server_object_store_requests_total 'op="(GET|HEAD)"')
stop_replica c; start_replica c
read -ra disk <<<"$(query_all)"
read -ra memory <<<"$(query_all)"
ms() { echo "$1 * 1000" | bc -l; }
printf 'ops view p50/p99 ms: cold (no cache) %.1f/%.1f (%.1f object-store reads each), disk cache %.1f/%.1f, memory %.1f/%.1f\n' \
  "$(ms "$(pct 50 "${cold[@]}")")" "$(ms "$(pct 99 "${cold[@]}")")" "$(echo "($g1 - $g0) / 20" | bc -l)" \
  "$(ms "$(pct 50 "${disk[@]}")")" "$(ms "$(pct 99 "${disk[@]}")")" "$(ms "$(pct 50 "${memory[@]}")")" "$(ms "$(pct 99 "${memory[@]}")")"

echo "== 4. object-store requests by operation over the whole run, and their price"
for r in a b c; do curl -s "http://$(http "$r")/metrics"; done | awk '
  index($1, "fleetprof_server_object_store_requests_total{") == 1 {
    match($1, /op="[^"]*"/); op = substr($1, RSTART + 4, RLENGTH - 5); n[op] += $2 }
  END { for (op in n) printf "  %-24s %d\n", op, n[op] }' | sort
awk -v r="$(echo "$put1 - $put0" | bc)" -v n="$profiles" 'BEGIN {
  # An upload of a small profile: every request a write-class one at worst ($0.005 per 1,000).
  printf "per 1M profiles ingested: %.1fM requests, at most $%.0f at S3 Standard list prices\n", r / n, r / n * 1e6 / 1000 * 0.005 }'
echo "cold job view: read-class requests at \$0.0004 per 1,000 (the first call on each replica above)"
