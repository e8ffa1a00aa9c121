#!/usr/bin/env bash
# Installs the Debian 12 packages fleetprof builds and tests with. Idempotent: when every
# package is present it only checks and exits in about a second.
set -euo pipefail

BUILD_PKGS=(
  build-essential cmake ninja-build pkg-config ccache git
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev librocksdb-dev prometheus-cpp-dev libspdlog-dev libsimdjson-dev libcpp-httplib-dev
  zlib1g-dev libzstd-dev libsqlite3-dev libgtest-dev libgmock-dev libbenchmark-dev libisal-dev libssl-dev libboost1.74-dev
)
# Only the tests need these: real PyTorch traces, a Python gRPC peer, a real Prometheus,
# a real headless browser for the web app, openssl for the TLS tests' certificates, clang for
# the libFuzzer targets (scripts/fuzz.sh), etcd for the cluster's catalog (tests and
# scripts/run.sh --cluster; its S3 server, s3rver, comes from npm below), Go for `go tool pprof`
# (the pprof export is checked with the real client), podman with buildah and runc to build and run
# the container image (scripts/build-image.sh; crun cannot run on a hybrid cgroup v1/v2 host).
# kubectl (with kustomize v5) for tests/kubernetes is not a Debian package: Debian 12's
# kubernetes-client is 1.20, whose kustomize v2 cannot read the manifests; this machine kind ships
# kubectl 1.32, and the test fails under CI=true without it.
TEST_PKGS=(python3 python3-torch python3-grpcio python3-protobuf python3-pytest python3-pandas
           python3-setuptools python3-venv prometheus time procps chromium openssl clang
           etcd-server etcd-client curl golang-go podman buildah runc)

want=("${BUILD_PKGS[@]}")
if [[ "${1:-}" != "--build-only" ]]; then want+=("${TEST_PKGS[@]}"); fi

missing=()
for p in "${want[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [[ $(id -u) -ne 0 ]]; then SUDO=sudo; else SUDO=; fi
if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#want[@]} packages present"
else
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# s3rver, the S3 server of the cluster tests, from npm at the version its lockfile pins, under
# /opt/fleetprof-test (tests/cluster/cluster_engines.cc looks there; $FLEETPROF_S3RVER overrides).
if [[ "${1:-}" != "--build-only" ]]; then
  s3rver_dir=/opt/fleetprof-test
  here=$(cd "$(dirname "$0")/.." && pwd)
  if ! cmp -s "$here/tests/cluster/s3rver/package-lock.json" "$s3rver_dir/package-lock.json" ||
     [[ ! -x "$s3rver_dir/node_modules/.bin/s3rver" ]]; then
    echo "install-deps: installing s3rver (npm) into $s3rver_dir"
    $SUDO mkdir -p "$s3rver_dir"
    $SUDO cp "$here/tests/cluster/s3rver/package.json" "$here/tests/cluster/s3rver/package-lock.json" "$s3rver_dir/"
    (cd "$s3rver_dir" && $SUDO npm ci --no-audit --no-fund --loglevel=error)
  fi
  # A real Connect client (connect-node, @bufbuild/protobuf and protoc-gen-es, which generates
  # its code from proto/querier) for tests/e2e/connect_api_test.cc, under
  # /opt/fleetprof-test/connect ($FLEETPROF_CONNECT_CLIENT overrides), pinned by its lockfile.
  connect_dir=$s3rver_dir/connect
  if ! cmp -s "$here/tests/connect_client/package-lock.json" "$connect_dir/package-lock.json" ||
     [[ ! -x "$connect_dir/node_modules/.bin/protoc-gen-es" ]]; then
    echo "install-deps: installing the Connect client (npm) into $connect_dir"
    $SUDO mkdir -p "$connect_dir"
    $SUDO cp "$here/tests/connect_client/package.json" "$here/tests/connect_client/package-lock.json" "$connect_dir/"
    (cd "$connect_dir" && $SUDO npm ci --no-audit --no-fund --loglevel=error)
  fi
  # The Kubernetes API schemas (kubernetes-models, prometheus-operator's) that tests/kubernetes
  # validates the rendered manifests against, offline; $FLEETPROF_K8S_VALIDATOR overrides.
  validator_dir=$s3rver_dir/kubernetes-validate
  if ! cmp -s "$here/tests/kubernetes/validator/package-lock.json" "$validator_dir/package-lock.json" ||
     [[ ! -d "$validator_dir/node_modules/kubernetes-models" ]]; then
    echo "install-deps: installing the Kubernetes schema validator (npm) into $validator_dir"
    $SUDO mkdir -p "$validator_dir"
    $SUDO cp "$here/tests/kubernetes/validator/package.json" "$here/tests/kubernetes/validator/package-lock.json" \
      "$validator_dir/"
    (cd "$validator_dir" && $SUDO npm ci --no-audit --no-fund --loglevel=error)
  fi
fi
