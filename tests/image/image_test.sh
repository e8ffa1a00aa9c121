#!/usr/bin/env bash
# Builds the container image from a build's bin/ (scripts/build-image.sh) and runs it the way
# deploy/kubernetes runs it: the server as its non-root user on 0.0.0.0 with TLS, client
# certificates (mTLS) and tokens (no --insecure), probed by the exec probe of the mTLS
# component (curl inside the image with a client certificate), fed an upload of a corpus trace
# by the image's own CLI; the agent as root with only SYS_PTRACE, SYS_ADMIN and
# DAC_READ_SEARCH and the host's PIDs, with its token from /secrets/$NODE_NAME, registering with
# the server. Paths, modes and flags are the manifests' (deploy/kubernetes/base).
#   image_test.sh BIN_DIR SHARED_DIR
# Exit 77 (skipped) when podman, runc or openssl is missing; under CI=true that fails instead.
#
# How podman runs here (root inside a sandbox): crun refuses this host's hybrid cgroup v1/v2
# layout, so runc; the sandbox lacks CAP_SYS_RESOURCE, so the containers' rlimits are set
# explicitly below the host's (podman's defaults would raise them); no registry and no bridge
# network, so --network=host and loopback addresses.
set -euo pipefail
bin_dir=$(cd "$1" && pwd)
shared_dir=$2
here=$(cd "$(dirname "$0")/../.." && pwd)
trace=$shared_dir/corpus/kineto/mi250_rocm62.json.gz

missing=()
for tool in podman runc openssl curl setpriv; do command -v "$tool" > /dev/null || missing+=("$tool"); done
[[ -f "$trace" ]] || missing+=("$trace")
if ((${#missing[@]})); then
  if [[ "${CI:-}" == true ]]; then echo "FAIL: missing (CI=true): ${missing[*]}" >&2; exit 1; fi
  echo "SKIP: missing ${missing[*]} (scripts/install-deps.sh installs them)"; exit 77
fi

id=$$
tag=localhost/fleetprof:image-test-$id
srv=fleetprof-image-test-server-$id
agent=fleetprof-image-test-agent-$id
node=image-test-node-$id
work=$(mktemp -d /tmp/fleetprof-image-test.XXXXXX)
podman=(podman --cgroup-manager=cgroupfs --runtime=runc)
run_flags=(--network=host --ulimit nofile=4096:4096 --ulimit nproc=4096:4096)
job_pid=
cleanup() {
  [[ -n "$job_pid" ]] && kill "$job_pid" 2> /dev/null
  "${podman[@]}" rm -f -t 2 "$srv" "$agent" > /dev/null 2>&1 || true
  "${podman[@]}" rmi -f "$tag" > /dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  for c in "$srv" "$agent"; do echo "--- log of $c" >&2; "${podman[@]}" logs "$c" 2>&1 | tail -20 >&2 || true; done
  exit 1
}

echo "== image"
start=$(date +%s)
bash "$here/scripts/build-image.sh" "$bin_dir" "$tag" | tee "$work/build.txt"
echo "built in $(( $(date +%s) - start )) s"

echo "== certificates and tokens, laid out as deploy/kubernetes mounts its Secrets"
mkdir -p "$work"/{pki,tls,probe,client,ca,auth,secrets,run,kineto,kineto-traces,traces,state}
(
  cd "$work/pki"
  openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 1 -subj /CN=fleetprof-test-ca 2> /dev/null
  # The names deploy/kubernetes dials (the mTLS probe's --resolve), localhost (the agent's
  # dns:/// target below) and 127.0.0.1.
  printf 'subjectAltName=DNS:fleetprof.fleetprof.svc,DNS:fleetprof-server-headless.fleetprof.svc,DNS:localhost,IP:127.0.0.1\n' > san.ext
  for name in server probe client; do
    openssl req -newkey rsa:2048 -nodes -keyout $name.key -out $name.csr -subj /CN=$name 2> /dev/null
    openssl x509 -req -in $name.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out $name.pem -days 1 \
      -extfile san.ext 2> /dev/null
  done
)
cp "$work/pki/server.pem" "$work/tls/tls.crt"; cp "$work/pki/server.key" "$work/tls/tls.key"
cp "$work/pki/ca.pem" "$work/tls/ca.crt"; cp "$work/pki/ca.pem" "$work/ca/ca.crt"
cp "$work/pki/probe.pem" "$work/probe/tls.crt"; cp "$work/pki/probe.key" "$work/probe/tls.key"
cp "$work/pki/client.pem" "$work/client/tls.crt"; cp "$work/pki/client.key" "$work/client/tls.key"
token() { head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
sha() { printf '%s' "$1" | sha256sum | cut -d' ' -f1; }
user_token=$(token)
agent_token=$(token)
printf '%s read,ingest,capture user\n%s agent,ingest %s\n' "$(sha "$user_token")" "$(sha "$agent_token")" "$node" \
  > "$work/auth/tokens"
printf '%s' "$user_token" > "$work/user-token"
printf '%s' "$agent_token" > "$work/secrets/$node"
# As a Secret volume with fsGroup 10001 and defaultMode 0440 has them: root:10001, read-only
# (the server refuses a tokens file that others can write).
chgrp -R 10001 "$work/tls" "$work/probe" "$work/auth"
chmod 0750 "$work/tls" "$work/probe" "$work/auth"
chmod 0440 "$work"/tls/* "$work"/probe/* "$work"/auth/*
chmod 0644 "$work/user-token" "$work"/client/* "$work"/ca/*
chmod 1777 "$work/run"

echo "== server (uid 10001, read-only root, 0.0.0.0, TLS + client certificates + tokens)"
"${podman[@]}" run -d --name "$srv" "${run_flags[@]}" --read-only --cap-drop=all \
  -v "$work/tls:/etc/fleetprof/tls:ro" -v "$work/auth:/etc/fleetprof/auth:ro" -v "$work/probe:/etc/fleetprof/probe:ro" \
  -v "$work/run:/run/fleetprof" \
  "$tag" --grpc_addr=0.0.0.0:0 --http_addr=0.0.0.0:0 --ready_file=/run/fleetprof/server.json \
  --auth_tokens_file=/etc/fleetprof/auth/tokens --tls_cert=/etc/fleetprof/tls/tls.crt \
  --tls_key=/etc/fleetprof/tls/tls.key --tls_client_ca=/etc/fleetprof/tls/ca.crt > /dev/null
for _ in $(seq 100); do [[ -s "$work/run/server.json" ]] && break; sleep 0.2; done
[[ -s "$work/run/server.json" ]] || fail "the server wrote no ready file"
grpc_port=$(sed -n 's/.*"grpc":"[^"]*:\([0-9]*\)".*/\1/p' "$work/run/server.json")
http_port=$(sed -n 's/.*"http":"[^"]*:\([0-9]*\)".*/\1/p' "$work/run/server.json")
[[ -n "$grpc_port" && -n "$http_port" ]] || fail "ready file unreadable: $(cat "$work/run/server.json")"
user=$("${podman[@]}" top "$srv" user | awk 'NR == 2 {print $1}')
[[ "$user" == fleetprof ]] || fail "the server runs as '$user', not fleetprof"
echo "server runs as $user, gRPC :$grpc_port, HTTP :$http_port"

# A kubelet's HTTPS probe presents no client certificate: with mTLS on, the handshake fails...
if curl -fsS -k --max-time 5 "https://127.0.0.1:$http_port/healthz" > /dev/null 2>&1; then
  fail "/healthz answered a client without a certificate although --tls_client_ca is set"
fi
# ...so deploy/kubernetes/components/mtls probes with this command inside the container
# (there on port 7071; here the port the server picked).
probe=(curl -fsS --max-time 4 --resolve "fleetprof.fleetprof.svc:$http_port:127.0.0.1"
       --cacert /etc/fleetprof/tls/ca.crt --cert /etc/fleetprof/probe/tls.crt --key /etc/fleetprof/probe/tls.key
       "https://fleetprof.fleetprof.svc:$http_port/healthz")
health=$("${podman[@]}" exec "$srv" "${probe[@]}") || fail "the exec probe failed"
[[ "$health" == ok* ]] || fail "/healthz answered '$health'"
echo "exec probe: /healthz $health"

cli=("${podman[@]}" run --rm "${run_flags[@]}" --read-only -v "$work/ca:/etc/fleetprof/ca:ro"
     -v "$work/client:/etc/fleetprof/client:ro" -v "$work/user-token:/etc/fleetprof/token:ro"
     -v "$trace:/trace/$(basename "$trace"):ro" --entrypoint fleetprof "$tag"
     --server "127.0.0.1:$grpc_port" --tls_ca /etc/fleetprof/ca/ca.crt --tls_cert /etc/fleetprof/client/tls.crt
     --tls_key /etc/fleetprof/client/tls.key --token_file /etc/fleetprof/token --json)
uploaded=$("${cli[@]}" upload "/trace/$(basename "$trace")" --job image-test) || fail "upload failed"
[[ "$uploaded" == *'"profile_id":"'* ]] || fail "upload answered '$uploaded'"
listed=$("${cli[@]}" profiles --job image-test) || fail "profiles failed"
[[ "$listed" == *'"job":"image-test"'* ]] || fail "the upload is not listed: $listed"
echo "upload from the image's CLI: $uploaded"

# A job of another user (nobody) on the host that names its profiler server in its environment:
# the agent finds it through the host's /proc (hostPID), reading another uid's environ
# (SYS_PTRACE).
job=image-job-$id
FLEETPROF_JOB=$job FLEETPROF_XPROF_ADDR=127.0.0.1:9 setpriv --reuid=65534 --regid=65534 --clear-groups \
  sleep 300 &
job_pid=$!
# What each of the agent's capabilities is for, as the kernel sees it (curl reads /proc files
# here; the agent opens the same ones): /proc/PID/environ is mode 0400 of the job's uid, so
# root needs DAC_READ_SEARCH to open it, and /proc/PID/ns/net passes the ptrace access check
# only with SYS_PTRACE. (SYS_ADMIN is setns(CLONE_NEWNET), which curl cannot show.)
caps=(--cap-drop=all --cap-add=SYS_PTRACE --cap-add=SYS_ADMIN --cap-add=DAC_READ_SEARCH)
read_proc() {  # read_proc FILE CAPABILITY-FLAGS...: succeeds when the container could open FILE
  local file=$1
  shift
  "${podman[@]}" run --rm "${run_flags[@]}" --pid=host --user 0 --read-only "$@" --entrypoint /usr/bin/curl "$tag" \
    -sS -o /dev/null "file://$file" 2> /dev/null
}
read_proc "/proc/$job_pid/environ" "${caps[@]}" || fail "the agent's capabilities cannot read another uid's environ"
read_proc "/proc/$job_pid/ns/net" "${caps[@]}" || fail "the agent's capabilities cannot open another uid's ns/net"
if read_proc "/proc/$job_pid/environ" --cap-drop=all --cap-add=SYS_PTRACE --cap-add=SYS_ADMIN; then
  fail "environ opened without DAC_READ_SEARCH: drop it from the documented set"
fi
if read_proc "/proc/$job_pid/ns/net" --cap-drop=all --cap-add=SYS_ADMIN --cap-add=DAC_READ_SEARCH; then
  fail "ns/net opened without SYS_PTRACE: drop it from the documented set"
fi
echo "capabilities: environ needs DAC_READ_SEARCH, ns/net needs SYS_PTRACE (checked)"
# The agent dials dns:///NAME:PORT as on Kubernetes (the headless Service): the image's name
# resolution (gRPC's resolver, /etc/hosts, nsswitch) works without a shell or libc extras.
echo "== agent (root with SYS_PTRACE, SYS_ADMIN, DAC_READ_SEARCH only, host PIDs, read-only root)"
# The DaemonSet's init container: the shared Kineto socket folder open to every job user.
"${podman[@]}" run --rm "${run_flags[@]}" --read-only --user 0 --cap-drop=all \
  -v "$work/kineto:/var/run/fleetprof/kineto" --entrypoint /usr/bin/chmod "$tag" 1777 /var/run/fleetprof/kineto
[[ $(stat -c %a "$work/kineto") == 1777 ]] || fail "the init container's chmod did not make the socket folder 1777"
"${podman[@]}" run -d --name "$agent" "${run_flags[@]}" --pid=host --user 0 --read-only --read-only-tmpfs=false \
  --cap-drop=all --cap-add=SYS_PTRACE --cap-add=SYS_ADMIN --cap-add=DAC_READ_SEARCH \
  -e NODE_NAME="$node" -e KINETO_IPC_SOCKET_DIR=/var/run/fleetprof/kineto \
  -v "$work/ca:/etc/fleetprof/ca:ro" -v "$work/client:/etc/fleetprof/client:ro" -v "$work/secrets:/secrets:ro" \
  -v "$work/kineto:/var/run/fleetprof/kineto" -v "$work/kineto-traces:/tmp/fleetprof_traces" \
  -v "$work/traces:/var/lib/fleetprof/traces" -v "$work/state:/var/lib/fleetprof/agent" \
  -v "$work/run:/run/fleetprof/ready" --entrypoint /usr/local/bin/fleetprof-agent "$tag" \
  --server="dns:///localhost:$grpc_port" --node="$node" --token_file="/secrets/$node" \
  --tls_ca=/etc/fleetprof/ca/ca.crt --tls_cert=/etc/fleetprof/client/tls.crt --tls_key=/etc/fleetprof/client/tls.key \
  --metrics_addr=127.0.0.1:0 --dynolog_addr= --nvml_library= --state_dir=/var/lib/fleetprof/agent \
  --trace_dir=/var/lib/fleetprof/traces --kineto_trace_dir=/tmp/fleetprof_traces --max_capture_memory_mb=2048 \
  --discover_interval_ms=500 --ready_file=/run/fleetprof/ready/agent.json > /dev/null
registered=
for _ in $(seq 60); do
  agents=$("${cli[@]}" agents 2> /dev/null || true)
  if [[ "$agents" == *"\"node\":\"$node\",\"state\":\"CONNECTED\""* && "$agents" == *"\"job\":\"$job\""* ]]; then
    registered=1
    break
  fi
  sleep 0.5
done
[[ -n "$registered" ]] || fail "the agent did not register with the job $job as its target: ${agents:-no answer}"
echo "agents: $agents"
for _ in $(seq 20); do [[ -s "$work/run/agent.json" ]] && break; sleep 0.2; done
metrics_port=$(sed -n 's/.*"metrics":"[^"]*:\([0-9]*\)".*/\1/p' "$work/run/agent.json")
# The DaemonSet's readiness probe: GET /metrics on the agent's metrics port.
curl -fsS --max-time 5 "http://127.0.0.1:${metrics_port:?no metrics port in the ready file}/metrics" \
  | grep -q '^fleetprof_' || fail "the agent's /metrics serves no fleetprof_ series"
[[ -S "$work/kineto/dynolog" ]] || fail "the agent made no Kineto socket in the shared folder"
[[ $(stat -c %a "$work/kineto-traces") == 1733 ]] || fail "the agent did not make the Kineto trace folder 1733"
echo "agent ready: /metrics on :$metrics_port, Kineto socket and trace folder in the shared host folders"
echo "== image test passed ($(tail -1 "$work/build.txt" | sed 's/^build-image: //'))"
