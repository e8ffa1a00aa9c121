#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ with clang (ASan + UBSan) into build-fuzz and runs
# each for SECONDS, seeded from ../shared/corpus. A crash, leak, timeout (10 s per input) or
# out-of-memory (2 GiB) fails the run; libFuzzer writes the input to build-fuzz/artifacts/.
#   scripts/fuzz.sh [SECONDS] [TARGET...]      default: 30 s, every target
# The corpus each run grows is kept in build-fuzz/corpus/TARGET and seeds the next run.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
shift || true
all_targets=(kineto_json_fuzzer gzip_fuzzer xspace_fuzzer nsys_sqlite_fuzzer kineto_ipc_fuzzer dynolog_api_fuzzer)
targets=("$@")
if ((${#targets[@]} == 0)); then targets=("${all_targets[@]}"); fi
# Target names become paths under build-fuzz/: only the known ones.
for target in "${targets[@]}"; do
  [[ " ${all_targets[*]} " == *" $target "* ]] || { echo "fuzz: unknown target '$target' (one of: ${all_targets[*]})" >&2; exit 2; }
done
[[ "$seconds" =~ ^[0-9]+$ ]] || { echo "fuzz: SECONDS must be a whole number, got '$seconds'" >&2; exit 2; }
shared=${FLEETPROF_SHARED_DIR:-../shared}
if [[ ! -d "$shared/corpus" ]]; then
  echo "fuzz: $shared/corpus is missing (the seeds)" >&2
  exit 1
fi
command -v clang++ >/dev/null || { echo "fuzz: clang++ is missing (apt-get install clang)" >&2; exit 1; }

dir=build-fuzz
if [[ ! -f "$dir/build.ninja" ]]; then
  CC=clang CXX=clang++ cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFLEETPROF_FUZZ=ON >/dev/null
fi
cmake --build "$dir" -j "${FLEETPROF_JOBS:-$(nproc)}" --target "${targets[@]}"

# Seeds: the corpus as the readers see it (JSON decompressed, gzip as is; nsys exports cut to
# their first rows in 512-byte pages, under -max_len), plus small hand-made messages for the IPC
# and API targets.
seed() {
  local target=$1 corpus=$dir/corpus/$1
  mkdir -p "$corpus"
  [[ -n "$(ls -A "$corpus")" ]] && return
  case $target in
    kineto_json_fuzzer)
      for f in "$shared"/corpus/kineto/*.json.gz; do
        # head stops reading after 64 KiB: zcat's SIGPIPE is expected, not a failure.
        out="$corpus/$(basename "$f" .gz)"
        zcat "$f" | head -c 65536 >"$out" || [[ -s "$out" ]]
      done ;;
    gzip_fuzzer) cp "$shared"/corpus/kineto/*.gz "$corpus/" ;;
    xspace_fuzzer)
      for f in "$shared"/corpus/xspace/*.pb; do head -c 65536 "$f" >"$corpus/$(basename "$f")"; done ;;
    nsys_sqlite_fuzzer)
      for f in "$shared"/corpus/nsys/*.sqlite.gz; do nsys_seed "$f" "$corpus/$(basename "$f" .gz)"; done ;;
    kineto_ipc_fuzzer)
      printf '\x18\0\0\0\0\0\0\0req\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\x03\0\0\0\x02\0\0\0\x07\0\0\0\0\0\0\0\x10\0\0\0\x01\0\0\0' >"$corpus/req"
      printf '\x10\0\0\0\0\0\0\0ctxt\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\x10\0\0\0\0\0\0\0\0\0\0\0' >"$corpus/ctxt" ;;
    dynolog_api_fuzzer)
      echo '{"fn":"getStatus"}' >"$corpus/status"
      echo '{"fn":"getVersion"}' >"$corpus/version"
      echo '{"fn":"setKinetOnDemandRequest","config":"ACTIVITIES_DURATION_MSECS=500\nACTIVITIES_LOG_FILE=/tmp/x.json","job_id":0,"pids":[1,2],"process_limit":3}' >"$corpus/trace" ;;
  esac
}

# A small export from the nsys export $1: the first rows of each table the reader reads and the
# strings they name, as a new SQLite file $2 (Python's sqlite3: python3 is a test package).
nsys_seed() {
  local full
  full=$(mktemp)
  zcat "$1" >"$full"
  python3 - "$full" "$2" <<'PY'
import sqlite3, sys
src, dst = sys.argv[1], sys.argv[2]
out = sqlite3.connect(dst)
out.execute("PRAGMA page_size = 512")
out.execute("ATTACH ? AS c", (src,))
have = {r[0] for r in out.execute("SELECT name FROM c.sqlite_schema WHERE type = 'table'")}
ids = set()
for table, names in [("CUPTI_ACTIVITY_KIND_KERNEL", ["demangledName"]), ("CUPTI_ACTIVITY_KIND_MEMCPY", []),
                     ("CUPTI_ACTIVITY_KIND_MEMSET", []), ("CUPTI_ACTIVITY_KIND_RUNTIME", ["nameId"]),
                     ("NVTX_EVENTS", ["textId"]), ("TARGET_INFO_GPU", []), ("ENUM_CUDA_MEMCPY_OPER", []),
                     ("META_DATA_EXPORT", []), ("EXPORT_META_DATA", [])]:
    if table not in have:
        continue
    out.execute(f"CREATE TABLE main.{table} AS SELECT * FROM c.{table} LIMIT 12")
    for name in names:
        ids.update(r[0] for r in out.execute(f"SELECT {name} FROM main.{table}") if r[0] is not None)
out.execute("CREATE TABLE main.StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL)")
out.executemany("INSERT INTO main.StringIds SELECT id, substr(value, 1, 200) FROM c.StringIds WHERE id = ?",
                [(i,) for i in sorted(ids)])
out.commit()
out.execute("DETACH c")
out.execute("VACUUM")
out.close()
PY
  rm -f "$full"
}

mkdir -p "$dir/artifacts"
# One libFuzzer process per core at a time: CI's 5 x 30 s take 90 s on 2 cores.
parallel=${FLEETPROF_FUZZ_JOBS:-$(nproc)}
run() {
  local target=$1
  "$dir/bin/$target" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$dir/artifacts/$target-" "$dir/corpus/$target" \
    >"$dir/$target.log" 2>&1
}
declare -A pids
for target in "${targets[@]}"; do
  seed "$target"
  while (( $(jobs -rp | wc -l) >= parallel )); do wait -n || true; done
  echo "== $target: ${seconds} s"
  run "$target" &
  pids[$target]=$!
done
status=0
for target in "${targets[@]}"; do
  if wait "${pids[$target]}"; then
    echo "$target: $(grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb" "$dir/$target.log" | tr -s ' ' | tr '\n' ' ')"
  else
    echo "fuzz: $target FAILED; the input is in $dir/artifacts/ (log: $dir/$target.log)" >&2
    tail -40 "$dir/$target.log" >&2
    status=1
  fi
done
exit $status
