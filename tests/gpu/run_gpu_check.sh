#!/usr/bin/env bash
# End-to-end check on a real NVIDIA GPU: capture a JAX job (XLA profiler service) and a
# PyTorch job (Kineto daemon protocol) through fleetprof, print their top kernels, and compare
# the agent's NVML metrics with nvidia-smi. Needs: nvidia-smi, python3 with jax and torch 2.x.
set -euo pipefail
cd "$(dirname "$0")/../.."
bundle=${FLEETPROF_BUNDLE:-}
if [[ -n $bundle ]]; then
  bin=$PWD/$bundle/bin
  export LD_LIBRARY_PATH=$PWD/$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
else
  bin=$PWD/build/bin
fi
py=${PYTHON:-python3}
work=$(mktemp -d /tmp/fleetprof-gpu-XXXXXX)
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; }
trap cleanup EXIT

echo "== nvidia-smi"
nvidia-smi --query-gpu=name,memory.used,memory.total,utilization.gpu,power.draw --format=csv

"$bin/fleetprof-server" --grpc_addr=127.0.0.1:0 --http_addr=127.0.0.1:0 --data_dir="$work/db" \
  --ready_file="$work/server.ready" --heartbeat_ms=500 >"$work/server.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [[ -f $work/server.ready ]] && break; sleep 0.1; done
grpc=$(sed -E 's/.*"grpc":"([^"]+)".*/\1/' "$work/server.ready")
export KINETO_IPC_SOCKET_DIR=$work/kineto
mkdir -p "$KINETO_IPC_SOCKET_DIR"
"$bin/fleetprof-agent" --server="$grpc" --metrics_addr=127.0.0.1:0 --dynolog_addr=127.0.0.1:0 \
  --state_dir="$work/agent" --kineto_trace_dir=/tmp/fleetprof_gpu_traces --sample_interval_ms=1000 \
  --discover_interval_ms=1000 --ready_file="$work/agent.ready" >"$work/agent.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [[ -f $work/agent.ready ]] && break; sleep 0.1; done
metrics=$(sed -E 's/.*"metrics":"([^"]+)".*/\1/' "$work/agent.ready")
fp() { "$bin/fleetprof" --server "$grpc" "$@"; }

echo "== JAX job (XLA profiler service on :9012)"
FLEETPROF_JOB=jax-mlp FLEETPROF_XPROF_ADDR=127.0.0.1:9012 "$py" - >"$work/jax.log" 2>&1 <<'PY' &
import time, jax, jax.numpy as jnp
jax.profiler.start_server(9012)
key = jax.random.PRNGKey(0)
w = jax.random.normal(key, (2048, 2048))
@jax.jit
def step(w, x):
    loss = lambda w: jnp.mean((jnp.tanh(x @ w) @ w.T - x) ** 2)
    return w - 1e-3 * jax.grad(loss)(w)
x = jax.random.normal(key, (1024, 2048))
end = time.time() + 90
while time.time() < end:
    w = step(w, x); w.block_until_ready()
PY
pids+=($!)

echo "== PyTorch job (KINETO_USE_DAEMON=1)"
FLEETPROF_JOB=torch-mlp KINETO_USE_DAEMON=1 "$py" - >"$work/torch.log" 2>&1 <<'PY' &
import time, torch
torch.cuda.init()
model = torch.nn.Sequential(torch.nn.Linear(2048, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 2048)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x = torch.randn(1024, 2048, device="cuda")
end = time.time() + 90
while time.time() < end:
    opt.zero_grad(); model(x).square().mean().backward(); opt.step()
    torch.cuda.synchronize()
PY
pids+=($!)

echo "== waiting for both jobs to be discovered"
for _ in $(seq 60); do
  agents=$(fp agents --json)
  [[ $agents == *'"job":"jax-mlp"'* && $agents == *'"job":"torch-mlp"'* ]] && break
  sleep 1
done
fp agents

status=0
for job in jax-mlp torch-mlp; do
  echo "== capture $job"
  if out=$(fp capture --job "$job" --duration_ms 2000 --wait --json); then
    id=$(echo "$out" | sed -E 's/.*"profile_id":"([^"]+)".*/\1/')
    fp breakdown "$id"
    fp kernels "$id" --limit 10
  else
    echo "capture of $job failed: $out"; status=1
  fi
done

echo "== agent NVML vs nvidia-smi"
curl -s "http://$metrics/metrics" | grep -E '^fleetprof_device_(memory_used_bytes|utilization_ratio|power_watts)' || status=1
nvidia-smi --query-gpu=memory.used,utilization.gpu,power.draw --format=csv,noheader,nounits |
  awk -F', ' '{printf "nvidia-smi: memory.used %d MiB = %d bytes, utilization %s %%, power %s W\n", $1, $1*1048576, $2, $3}'
exit $status
