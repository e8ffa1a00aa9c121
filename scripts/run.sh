#!/usr/bin/env bash
# Builds fleetprof and runs the main job on this machine: fleetprof-server (RocksDB under
# ./var/server) plus a local fleetprof-agent watching ./var/traces, all on loopback.
# Ctrl-C stops both.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --build-only
FLEETPROF_TARGETS="fleetprof fleetprof-server fleetprof-agent" bash scripts/build.sh build

bin=$PWD/build/bin
mkdir -p var/server var/agent var/traces
rm -f var/server.ready var/agent.ready
"$bin/fleetprof-server" --data_dir=var/server --ready_file=var/server.ready "$@" &
server_pid=$!
"$bin/fleetprof-agent" --state_dir=var/agent --trace_dir=var/traces --ready_file=var/agent.ready &
agent_pid=$!
trap 'kill -TERM $agent_pid $server_pid 2>/dev/null; wait' INT TERM EXIT

# Healthy = both listening and the agent registered with the server.
for _ in $(seq 100); do
  if [[ -f var/server.ready && -f var/agent.ready ]] &&
     "$bin/fleetprof" agents --json 2>/dev/null | grep -q '"CONNECTED"'; then
    break
  fi
  kill -0 $server_pid 2>/dev/null || { echo "fleetprof-server exited; see its log above" >&2; exit 1; }
  sleep 0.1
done
grpc=$(sed -E 's/.*"grpc":"([^"]+)".*/\1/' var/server.ready)
http=$(sed -E 's/.*"http":"([^"]+)".*/\1/' var/server.ready)
metrics=$(sed -E 's/.*"metrics":"([^"]+)".*/\1/' var/agent.ready)
cat <<TXT

fleetprof is up.
  gRPC           $grpc
  HTTP metrics   http://$http/metrics   (server)   http://$metrics/metrics   (agent)
  data           $PWD/var/server   traces watched in $PWD/var/traces

Try it (in another shell):
  build/bin/fleetprof upload ../shared/corpus/kineto/v100_resnet_rank0.pt.trace.json.gz --job resnet
  build/bin/fleetprof profiles
  build/bin/fleetprof kernels PROFILE_ID

Ctrl-C stops both daemons.
TXT
wait
