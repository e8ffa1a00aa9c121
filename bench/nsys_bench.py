#!/usr/bin/python3
"""Nsight Systems exports: `fleetprof analyze` against the `sqlite3` command on the same file.

    /usr/bin/python3 bench/nsys_bench.py [--runs 9] [--kernels 2000000] [--bin build/bin]

Cases: the largest corpus export (h100_2gpu_1s, gunzipped) and one generated from it with
--kernels kernel rows, as many CUDA calls launching them (same correlation ids) and one NVTX
push/pop range per 10 calls. The baseline is what a script over the export would run: the
`sqlite3` command with the kernel, memory, API and NVTX group-by queries of `nsys stats`' reports
(count, total, min, max, average per name). Runs alternate (fleetprof, sqlite3, fleetprof, …);
the medians and their ratio are printed, with fleetprof's peak RSS against the file's size.
Issue 41's bound: analysis at most 2x the queries, memory at most 2x the file plus a constant.
"""
import argparse
import gzip
import os
import shutil
import sqlite3
import statistics
import subprocess
import tempfile
import time

QUERIES = """
SELECT s.value, count(*), sum(k.end - k.start), min(k.end - k.start), max(k.end - k.start), avg(k.end - k.start)
  FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.demangledName GROUP BY k.demangledName;
SELECT copyKind, count(*), sum(end - start), min(end - start), max(end - start), sum(bytes)
  FROM CUPTI_ACTIVITY_KIND_MEMCPY GROUP BY copyKind;
SELECT s.value, count(*), sum(r.end - r.start), min(r.end - r.start), max(r.end - r.start), avg(r.end - r.start)
  FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId WHERE r.eventClass IN (0, 1) GROUP BY r.nameId;
SELECT coalesce(n.text, s.value), n.eventType, count(*), sum(n.end - n.start), min(n.end - n.start), max(n.end - n.start)
  FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId
  WHERE n.eventType IN (59, 60, 70, 71) AND n.end IS NOT NULL GROUP BY 1, 2;
"""


def corpus_dir():
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(here, "..", "..", "shared", "corpus", "nsys")


def generate(base, out, kernels):
    """`base` with `kernels` kernel rows, as many launching calls and NVTX ranges over them."""
    shutil.copyfile(base, out)
    db = sqlite3.connect(out)
    span = db.execute("SELECT max(end) - min(start) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0] + 1
    have = db.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
    launch = db.execute("SELECT id FROM StringIds WHERE value LIKE 'cudaLaunchKernel%' LIMIT 1").fetchone()
    launch_id = launch[0] if launch else db.execute("SELECT max(id) + 1 FROM StringIds").fetchone()[0]
    if not launch:
        db.execute("INSERT INTO StringIds(id, value) VALUES (?, 'cudaLaunchKernel_v7000')", (launch_id,))
    thread = db.execute("SELECT globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME LIMIT 1").fetchone()[0]
    copies = (kernels + have - 1) // have
    base_corr = db.execute("SELECT max(correlationId) FROM CUPTI_ACTIVITY_KIND_RUNTIME").fetchone()[0] + 1
    # Copies of the real kernels shifted by whole spans; each gets its own correlation id and call.
    columns = [r[1] for r in db.execute("PRAGMA table_info(CUPTI_ACTIVITY_KIND_KERNEL)")]
    shifted = {"start": f"k.start + n.i * {span}", "end": f"k.end + n.i * {span}",
               "correlationId": f"{base_corr} + (n.i - 1) * {have} + (k.rowid % {have})"}
    select = ", ".join(shifted.get(c, f"k.{c}") for c in columns)
    db.execute(f"""
      INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL({", ".join(columns)})
      WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {copies})
      SELECT {select} FROM n, (SELECT rowid, * FROM CUPTI_ACTIVITY_KIND_KERNEL LIMIT {have}) k LIMIT {kernels}""")
    db.execute(f"""
      INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME(start, end, eventClass, globalTid, correlationId, nameId, returnValue)
      SELECT start - 5000, start - 1000, 0, {thread}, correlationId, {launch_id}, 0
      FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE correlationId >= {base_corr}""")
    db.execute(f"""
      INSERT INTO NVTX_EVENTS(start, end, eventType, text, globalTid, domainId)
      SELECT start - 6000, start - 500, 59, 'step_range', {thread}, 0
      FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE correlationId >= {base_corr} AND correlationId % 10 = 0""")
    db.commit()
    db.close()


def timed(cmd, stdout=subprocess.DEVNULL):
    """(wall seconds, peak RSS MiB) of one run under GNU time."""
    start = time.perf_counter()
    r = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, stdout=stdout, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {r.stderr.strip()}")
    wall = time.perf_counter() - start
    return wall, int(r.stderr.strip().splitlines()[-1]) / 1024


def bench(name, path, binary, runs):
    size_mib = os.path.getsize(path) / 2**20
    ours, theirs, rss = [], [], []
    for _ in range(runs):
        wall, peak = timed([binary, "analyze", path, "--json", "--max_trace_events", "12000000"])
        ours.append(wall)
        rss.append(peak)
        with open(os.devnull, "w") as sink:
            start = time.perf_counter()
            subprocess.run(["sqlite3", path], input=QUERIES, stdout=sink, text=True, check=True)
            theirs.append(time.perf_counter() - start)
    a, b = statistics.median(ours), statistics.median(theirs)
    print(f"{name:28s} {size_mib:9.1f} {a:10.3f} {b:10.3f} {a / b:7.2f}x {max(rss):10.1f} "
          f"{max(rss) / size_mib:8.2f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--kernels", type=int, default=2_000_000)
    ap.add_argument("--bin", default=os.path.join(os.path.dirname(__file__), "..", "build", "bin"))
    args = ap.parse_args()
    binary = os.path.join(args.bin, "fleetprof")
    work = tempfile.mkdtemp(prefix="fleetprof-nsys-bench-")
    try:
        corpus = os.path.join(work, "h100_2gpu_1s.sqlite")
        with gzip.open(os.path.join(corpus_dir(), "h100_2gpu_1s.sqlite.gz")) as src, open(corpus, "wb") as dst:
            shutil.copyfileobj(src, dst)
        generated = os.path.join(work, f"generated_{args.kernels}_kernels.sqlite")
        generate(corpus, generated, args.kernels)
        print(f"{'case':28s} {'MiB':>9s} {'fleetprof':>10s} {'sqlite3':>10s} {'ratio':>8s} {'RSS MiB':>10s} "
              f"{'RSS/file':>8s}   (medians of {args.runs} alternated runs, seconds)")
        bench("corpus h100_2gpu_1s", corpus, binary, args.runs)
        bench(f"generated {args.kernels} kernels", generated, binary, args.runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
