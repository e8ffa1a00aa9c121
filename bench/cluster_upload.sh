#!/usr/bin/env bash
# Upload + index through a cluster replica (etcd + s3rver, all on this machine) against the
# embedded default of the same build, alternated in one run.
#   bench/cluster_upload.sh [--size_mb 54] [--runs 5] [BUILD_DIR]
# Prints the median upload time of each and their ratio, the CPU-seconds per GB of the replica,
# of etcd and of s3rver, the object store's bytes per uploaded byte, and the object-store and
# catalog requests one upload costs (from the replica's /metrics).
set -euo pipefail
cd "$(dirname "$0")/.."
size_mb=54 runs=5 build=build
while [[ $# -gt 0 ]]; do
  case $1 in
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
bytes=$(stat -c %s "$trace")
work=$(mktemp -d /tmp/fleetprof-cluster-bench-XXXXXX)
etcd_dir=$(mktemp -d /dev/shm/fleetprof-bench-etcd-XXXXXX)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$work" "$etcd_dir"' EXIT
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
ec=$(free_port) ep=$(free_port) sp=$(free_port)
etcd --name b --data-dir "$etcd_dir" --listen-client-urls "http://127.0.0.1:$ec" --advertise-client-urls "http://127.0.0.1:$ec" \
  --listen-peer-urls "http://127.0.0.1:$ep" --initial-advertise-peer-urls "http://127.0.0.1:$ep" \
  --initial-cluster "b=http://127.0.0.1:$ep" --log-level=error >"$work/etcd.log" 2>&1 &
etcd_pid=$!; pids+=($etcd_pid)
NODE_OPTIONS=--openssl-legacy-provider "$s3rver" -d "$work/s3" -a 127.0.0.1 -p "$sp" --configure-bucket bench --silent \
  >"$work/s3rver.log" 2>&1 &
s3_pid=$!; pids+=($s3_pid)
for _ in $(seq 200); do curl -sf "http://127.0.0.1:$ec/health" >/dev/null && curl -s "http://127.0.0.1:$sp" >/dev/null && break; sleep 0.1; done
printf '[default]\naws_access_key_id = S3RVER\naws_secret_access_key = S3RVER\n' >"$work/credentials"
start_server() {  # NAME EXTRA_FLAGS...
  local name=$1; shift
  "$bin/fleetprof-server" --grpc_addr=127.0.0.1:0 --http_addr=127.0.0.1:0 --data_dir="$work/$name" \
    --ready_file="$work/$name.ready" --log_level=warn "$@" >"$work/$name.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 400); do [[ -f $work/$name.ready ]] && break; sleep 0.05; done
}
start_server embedded
embedded_pid=${pids[-1]}
start_server replica --object_store=s3://bench/p --s3_endpoint="http://127.0.0.1:$sp" \
  --s3_credentials_file="$work/credentials" --etcd_endpoints="http://127.0.0.1:$ec"
replica_pid=${pids[-1]}
grpc() { sed -E 's/.*"grpc":"([^"]+)".*/\1/' "$work/$1.ready"; }
http() { sed -E 's/.*"http":"([^"]+)".*/\1/' "$work/$1.ready"; }
cpu() { awk '{print $14 + $15}' /proc/$1/stat; }
ticks=$(getconf CLK_TCK)
requests() { curl -s "http://$(http replica)/metrics" | awk -v m="$1" '$1 ~ "^"m"\\{" {s += $2} END {print s+0}'; }
now() { date +%s.%N; }
cat "$trace" >/dev/null
embedded_t=() replica_t=()
r0=$(cpu $replica_pid) e0=$(cpu $etcd_pid) s0=$(cpu $s3_pid)
o0=$(requests fleetprof_server_object_store_requests_total) c0=$(requests fleetprof_server_catalog_requests_total)
disk0=$(du -sb "$work/s3" | cut -f1)
replica_s=0
for i in $(seq "$runs"); do
  t0=$(now); "$bin/fleetprof" upload "$trace" --job bench --server "$(grpc embedded)" >/dev/null; t1=$(now)
  "$bin/fleetprof" upload "$trace" --job bench --server "$(grpc replica)" >/dev/null; t2=$(now)
  embedded_t+=("$(echo "$t1 - $t0" | bc -l)") replica_t+=("$(echo "$t2 - $t1" | bc -l)")
done
r1=$(cpu $replica_pid) e1=$(cpu $etcd_pid) s1=$(cpu $s3_pid)
o1=$(requests fleetprof_server_object_store_requests_total) c1=$(requests fleetprof_server_catalog_requests_total)
disk1=$(du -sb "$work/s3" | cut -f1)
# What the catalog keeps per profile: every key and value under the prefix (the replica's own
# registration included), over the profiles committed.
catalog_bytes=$(ETCDCTL_API=3 etcdctl --endpoints="http://127.0.0.1:$ec" get --prefix /fleetprof/ | wc -c)
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
e=$(median "${embedded_t[@]}") r=$(median "${replica_t[@]}")
awk -v b="$bytes" -v n="$runs" -v e="$e" -v r="$r" -v t="$ticks" -v rc=$((r1 - r0)) -v ec=$((e1 - e0)) -v sc=$((s1 - s0)) \
    -v o=$((o1 - o0)) -v c=$((c1 - c0)) -v d=$((disk1 - disk0)) -v cb="$catalog_bytes" 'BEGIN {
  gb = b * n / 1e9
  printf "file %.1f MB plain Kineto JSON, %d rounds alternated\n", b/1e6, n
  printf "upload+index median: embedded %.3f s, replica on etcd+s3rver %.3f s: replica/embedded %.2f\n", e, r, r/e
  printf "CPU s/GB during the replica uploads: replica %.2f, etcd %.2f, s3rver %.2f\n", rc/t/gb, ec/t/gb, sc/t/gb
  printf "object store: %.3f bytes per uploaded byte; per upload %.1f object-store and %.1f catalog requests\n", d/(b*n), o/n, c/n
  printf "catalog: %.0f bytes of keys and values per profile in etcd\n", cb/n
}'
