#!/usr/bin/env bash
# Measures an idle fleetprof-agent's CPU use and resident memory with 1 s sampling.
#   bench/agent_overhead.sh [SECONDS] [NVML_LIBRARY]   (default 60 s; NVML from the stand-in if built)
# Prints CPU seconds used over the window as a share of one core, and peak/final RSS.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
nvml=${2:-$(ls build/tests/collectors/libfake_nvml.so 2>/dev/null || true)}
work=$(mktemp -d /tmp/fleetprof-overhead-XXXXXX)
build/bin/fleetprof-server --grpc_addr=127.0.0.1:0 --http_addr=127.0.0.1:0 --data_dir="$work/db" \
  --ready_file="$work/server.ready" --log_level=warn &
server=$!
for _ in $(seq 100); do [[ -f $work/server.ready ]] && break; sleep 0.05; done
grpc=$(sed -E 's/.*"grpc":"([^"]+)".*/\1/' "$work/server.ready")
build/bin/fleetprof-agent --server="$grpc" --metrics_addr=127.0.0.1:0 --dynolog_addr=127.0.0.1:0 \
  --kineto_socket_dir="$work" --state_dir="$work/agent" --nvml_library="$nvml" \
  --sample_interval_ms=1000 --trace_dir="$work/traces" --log_level=warn &
agent=$!
trap 'kill $agent $server 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
sleep 3  # start-up is not idle time
ticks() { awk '{print $14 + $15}' /proc/$agent/stat; }
hz=$(getconf CLK_TCK)
t0=$(ticks)
sleep "$seconds"
t1=$(ticks)
rss=$(awk '$1 == "VmRSS:" {print $2}' /proc/$agent/status)
hwm=$(awk '$1 == "VmHWM:" {print $2}' /proc/$agent/status)
awk -v t="$((t1 - t0))" -v hz="$hz" -v s="$seconds" -v rss="$rss" -v hwm="$hwm" -v nvml="${nvml:-none}" 'BEGIN {
  printf "agent over %d s (1 s sampling, nvml=%s): CPU %.2f%% of one core, RSS %.1f MB (peak %.1f MB)\n",
    s, nvml, 100 * t / hz / s, rss / 1024, hwm / 1024 }'
