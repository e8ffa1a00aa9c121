#!/usr/bin/env bash
# Writes a small data dir with the binaries of one commit, and that commit's answers to every
# query over it: tests/e2e/golden_store_test.cc opens a copy with today's server and
# checks each answer is still the same, so the on-disk format cannot change by accident.
#   make_golden_store.sh BIN_DIR OUT_DIR CORPUS_DIR
# The checked-in tests/data/store_52e8783 was made by the binaries of commit 52e8783.
set -euo pipefail
bin=$1 out=$2 corpus=$3
rm -rf "$out" && mkdir -p "$out/golden"
ready=$(mktemp -u)
"$bin/fleetprof-server" --grpc_addr=127.0.0.1:0 --http_addr=127.0.0.1:0 --data_dir="$out/store" \
  --ready_file="$ready" --retention_days=0 2> "$out/server.log" &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 100); do [[ -f $ready ]] && break; sleep 0.1; done
addr=$(sed 's/.*"grpc":"\([^"]*\)".*/\1/' "$ready")
cli() { "$bin/fleetprof" --server "$addr" "$@"; }
a=$(cli upload "$corpus/kineto/mi250_rocm62.json.gz" --job golden --node n1 --label rank=0 --upload_id golden-mi250 --json | sed 's/.*"profile_id":"\([^"]*\)".*/\1/')
b=$(cli upload "$corpus/kineto/a100_alexnet.json.gz" --job golden --node n2 --label rank=1 --upload_id golden-alexnet --json | sed 's/.*"profile_id":"\([^"]*\)".*/\1/')
cli capture --job golden --json > /dev/null || true  # no agent: a FAILED capture, stored
g=$out/golden
cli profiles --json > "$g/profiles.json"
cli captures --json > "$g/captures.json"
for id in "$a" "$b"; do
  for q in ops kernels breakdown profile diagnose; do cli "$q" "$id" --json > "$g/$q.$id.json"; done
  cli trace "$id" --json --resolution_ns 100000 > "$g/trace.$id.json"
  cli export "$id" -o "$g/export.$id.bin" --json > /dev/null
  sha256sum < "$g/export.$id.bin" | cut -d' ' -f1 > "$g/export.$id.sha256"
  rm "$g/export.$id.bin"
done
cli diff "$a" "$b" --by kernel --json > "$g/diff.json"
cli job-ops golden --json > "$g/job-ops.json"
cli job-series golden --json > "$g/job-series.json"
kill -TERM $server
wait $server || true
trap - EXIT
rm -f "$out/store/LOG.old."* "$ready"
echo "wrote $out: profiles $a $b"
