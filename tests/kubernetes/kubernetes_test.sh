#!/usr/bin/env bash
# Renders deploy/kubernetes with `kubectl kustomize` (kubectl 1.32, kustomize v5), exactly as
# docs/kubernetes.md's "Deploy" section says, and checks every rendered object offline against the
# Kubernetes API schemas and fleetprof's deployment facts (validate.mjs says which). Also
# checks that docs/kubernetes.md names exactly the kustomizations rendered here, and that the checker
# refuses a rendering broken on purpose.
#   kubernetes_test.sh SOURCE_DIR BIN_DIR
# BIN_DIR's fleetprof-server and fleetprof-agent --help list the flags the manifests may use.
# Exit 77 (skipped) when kubectl, node or the validator's npm packages are missing (installed
# by scripts/install-deps.sh, except kubectl: see there); under CI=true that fails instead.
set -euo pipefail
source_dir=$(cd "$1" && pwd)
bin_dir=$(cd "$2" && pwd)
modules=${FLEETPROF_K8S_VALIDATOR:-/opt/fleetprof-test/kubernetes-validate}/node_modules
# The kustomizations, as docs/kubernetes.md's commands name them (relative to the checkout).
kustomizations=(deploy/kubernetes/overlays/single deploy/kubernetes/overlays/cluster
                deploy/kubernetes/overlays/cluster-mtls deploy/kubernetes/examples)

missing=()
command -v kubectl > /dev/null || missing+=(kubectl)
command -v node > /dev/null || missing+=(node)
[[ -d "$modules/kubernetes-models" ]] || missing+=("$modules (scripts/install-deps.sh)")
if command -v kubectl > /dev/null && ! kubectl version --client 2>/dev/null | grep -q 'Kustomize Version: v5'; then
  missing+=("kubectl with kustomize v5 (have: $(kubectl version --client 2>&1 | tr '\n' ' '))")
fi
if ((${#missing[@]})); then
  if [[ "${CI:-}" == true ]]; then echo "FAIL: missing (CI=true): ${missing[*]}" >&2; exit 1; fi
  echo "SKIP: missing ${missing[*]}"; exit 77
fi

work=$(mktemp -d /tmp/fleetprof-kubernetes-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$source_dir"

documented=$(grep -oE 'kubectl (kustomize|apply (--server-side )?-k) deploy/kubernetes/[A-Za-z0-9/_-]+' docs/kubernetes.md |
             awk '{print $NF}' | sort -u || true)
expected=$(printf '%s\n' "${kustomizations[@]}" | sort -u)
if [[ "$documented" != "$expected" ]]; then
  echo "FAIL: docs/kubernetes.md's kubectl commands name: ${documented//$'\n'/ }; the test renders: ${expected//$'\n'/ }" >&2
  exit 1
fi

renders=()
for k in "${kustomizations[@]}"; do
  name=$(basename "$k")
  kubectl kustomize "$k" > "$work/$name.yaml"
  renders+=("$name=$work/$name.yaml")
done
for b in fleetprof-server fleetprof-agent; do
  "$bin_dir/$b" --help > "$work/$b-flags.txt" 2>&1 || true
  grep -q -- '--help' "$work/$b-flags.txt" || { echo "FAIL: $bin_dir/$b --help lists no flags" >&2; exit 1; }
done
node "$source_dir/tests/kubernetes/validate.mjs" --modules "$modules" --grafana deploy/grafana \
  --server-flags "$work/fleetprof-server-flags.txt" --agent-flags "$work/fleetprof-agent-flags.txt" "${renders[@]}"

# The checker itself: a broken copy of the cluster rendering must fail, naming each break.
sed 's/hostPID: true/hostPid: true/; s/containerPort: 7072/containerPort: "7072"/; s/honorLabels: true/honorLabel: true/;
     s/--cache_mb=8192/--cache_size=8192/' "$work/cluster.yaml" > "$work/broken.yaml"
printf -- '---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: inline\nstringData:\n  token: x\n' >> "$work/broken.yaml"
printf -- '---\napiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n' >> "$work/broken.yaml"
if node "$source_dir/tests/kubernetes/validate.mjs" --modules "$modules" --grafana deploy/grafana \
     --server-flags "$work/fleetprof-server-flags.txt" --agent-flags "$work/fleetprof-agent-flags.txt" \
     "cluster=$work/broken.yaml" > "$work/broken.out" 2>&1; then
  echo "FAIL: the checker passed a broken rendering" >&2; exit 1
fi
for expected in 'unknown field "hostPid"' 'containerPort must be integer' 'unknown field "honorLabel"' \
                '--cache_size is not a flag' 'Secret/inline is rendered' 'no schema for example.com/v1 Widget' \
                'hostPID is not true'; do
  grep -qF -- "$expected" "$work/broken.out" || { echo "FAIL: the checker missed: $expected" >&2; cat "$work/broken.out" >&2; exit 1; }
done
echo "the checker refuses a broken rendering (7 breaks, each named)"
