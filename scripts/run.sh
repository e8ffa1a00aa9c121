#!/usr/bin/env bash
# Builds fleetprof and runs it on this machine, on loopback. Ctrl-C stops everything.
#   scripts/run.sh [SERVER FLAGS...]   one fleetprof-server (RocksDB under ./var/server) and a
#                                      fleetprof-agent watching ./var/traces
#   scripts/run.sh --cluster           a cluster: 3 etcd members, an S3 server (s3rver), 3 server
#                                      replicas on them, and the agent; state under ./var/cluster
set -euo pipefail
cd "$(dirname "$0")/.."
cluster=false
if [[ "${1:-}" == "--cluster" ]]; then cluster=true; shift; fi
if $cluster; then
  bash scripts/install-deps.sh  # etcd and s3rver are test packages
else
  bash scripts/install-deps.sh --build-only
fi
FLEETPROF_TARGETS="fleetprof fleetprof-server fleetprof-agent" bash scripts/build.sh build

bin=$PWD/build/bin
pids=()
trap 'kill -TERM "${pids[@]}" 2>/dev/null; wait' INT TERM EXIT
field() { sed -E "s/.*\"$2\":\"([^\"]+)\".*/\1/" "$1"; }
wait_for() {  # what, seconds, command...
  local what=$1 seconds=$2; shift 2
  for _ in $(seq $((seconds * 10))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "run.sh: $what did not come up; see the logs under var/" >&2
  exit 1
}

if ! $cluster; then
  mkdir -p var/server var/agent var/traces
  rm -f var/server.ready var/agent.ready
  "$bin/fleetprof-server" --data_dir=var/server --ready_file=var/server.ready "$@" &
  pids+=($!)
  "$bin/fleetprof-agent" --state_dir=var/agent --trace_dir=var/traces --ready_file=var/agent.ready &
  pids+=($!)
  # Healthy = both listening and the agent registered with the server.
  wait_for "the agent's registration" 10 bash -c "[[ -f var/server.ready && -f var/agent.ready ]] && '$bin/fleetprof' agents --json | grep -q '\"CONNECTED\"'"
  grpc=$(field var/server.ready grpc) http=$(field var/server.ready http) metrics=$(field var/agent.ready metrics)
  cat <<TXT

fleetprof is up.
  web app        http://$http/
  gRPC           $grpc   (the CLI's default --server)
  metrics        http://$http/metrics   (server)   http://$metrics/metrics   (agent)
  data           $PWD/var/server   traces watched in $PWD/var/traces

Try it (in another shell):
  build/bin/fleetprof upload ../shared/corpus/kineto/v100_resnet_rank0.pt.trace.json.gz --job resnet
  build/bin/fleetprof profiles
  build/bin/fleetprof kernels PROFILE_ID

Ctrl-C stops both daemons.
TXT
  wait
  exit 0
fi

# The cluster: every port on loopback; etcd's members on 2379/12379/22379 (peers one above).
root=$PWD/var/cluster
# The state (uploaded traces in s3rver's folder, the S3 credentials file) is this user's alone.
# etcd and s3rver themselves check no identity (s3rver ignores signatures): this is a demo on a
# machine of one's own, not a setup for a shared node.
umask 077
mkdir -p "$root"/{etcd,s3,traces,agent} && rm -f "$root"/*.ready
chmod 700 "$root"
members=() endpoints=()
for i in 0 1 2; do
  members+=("m$i=http://127.0.0.1:$((2380 + i * 10000))")
  endpoints+=("http://127.0.0.1:$((2379 + i * 10000))")
done
initial=$(IFS=,; echo "${members[*]}") etcd_endpoints=$(IFS=,; echo "${endpoints[*]}")
for i in 0 1 2; do
  state=new; [[ -d $root/etcd/m$i/member ]] && state=existing
  etcd --name "m$i" --data-dir "$root/etcd/m$i" --listen-client-urls "${endpoints[$i]}" \
    --advertise-client-urls "${endpoints[$i]}" --listen-peer-urls "http://127.0.0.1:$((2380 + i * 10000))" \
    --initial-advertise-peer-urls "http://127.0.0.1:$((2380 + i * 10000))" --initial-cluster "$initial" \
    --initial-cluster-state "$state" --initial-cluster-token fleetprof-run --log-level warn >"$root/etcd/m$i.log" 2>&1 &
  pids+=($!)
done
s3rver=${FLEETPROF_S3RVER:-/opt/fleetprof-test/node_modules/.bin/s3rver}
# s3rver's continuation tokens need DES, which Node's OpenSSL 3 keeps in its legacy provider.
NODE_OPTIONS=--openssl-legacy-provider "$s3rver" -d "$root/s3" -a 127.0.0.1 -p 4568 --configure-bucket fleetprof \
  --silent >"$root/s3rver.log" 2>&1 &
pids+=($!)
for i in 0 1 2; do wait_for "etcd member m$i" 30 curl -sf "${endpoints[$i]}/health"; done
wait_for "s3rver" 30 curl -s http://127.0.0.1:4568/
printf '[default]\naws_access_key_id = S3RVER\naws_secret_access_key = S3RVER\n' >"$root/s3-credentials"
for i in 0 1 2; do
  "$bin/fleetprof-server" --grpc_addr="127.0.0.1:$((7070 + i * 100))" --http_addr="127.0.0.1:$((7071 + i * 100))" \
    --data_dir="$root/replica$i" --replica_id="replica$i" --ready_file="$root/replica$i.ready" \
    --object_store=s3://fleetprof/profiles --s3_endpoint=http://127.0.0.1:4568 \
    --s3_credentials_file="$root/s3-credentials" --etcd_endpoints="$etcd_endpoints" "$@" \
    >"$root/replica$i.log" 2>&1 &
  pids+=($!)
done
for i in 0 1 2; do wait_for "replica$i" 30 test -f "$root/replica$i.ready"; done
"$bin/fleetprof-agent" --server=127.0.0.1:7070 --state_dir="$root/agent" --trace_dir="$root/traces" \
  --ready_file="$root/agent.ready" >"$root/agent.log" 2>&1 &
pids+=($!)
wait_for "the agent's registration" 15 bash -c "'$bin/fleetprof' agents --json | grep -q '\"CONNECTED\"'"
cat <<TXT

fleetprof is up as a cluster of 3 replicas.
  web app        http://127.0.0.1:7071/   http://127.0.0.1:7171/   http://127.0.0.1:7271/   (any replica)
  cluster view   http://127.0.0.1:7071/api/v1/cluster   or   build/bin/fleetprof cluster
  gRPC           127.0.0.1:7070   127.0.0.1:7170   127.0.0.1:7270
  catalog        etcd $etcd_endpoints
  object store   s3://fleetprof/profiles on s3rver http://127.0.0.1:4568 (data in $root/s3)
  agent          watching $root/traces, connected to replica0; metrics http://$(field "$root/agent.ready" metrics)/metrics
  logs           $root/*.log

Try it (in another shell):
  build/bin/fleetprof upload ../shared/corpus/kineto/v100_resnet_rank0.pt.trace.json.gz --job resnet
  build/bin/fleetprof --server 127.0.0.1:7170 profiles      (another replica sees it)
  build/bin/fleetprof cluster

Ctrl-C stops everything; the state stays under $root (delete it to start empty).
TXT
wait
