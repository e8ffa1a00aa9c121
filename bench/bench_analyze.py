#!/usr/bin/python3
"""Benchmarks `fleetprof analyze FILE --json` on every trace reader against a Python baseline.

For each case (corpus files and generated large ones, plain JSON, gzip JSON and XSpace) it runs
fleetprof --runs times under /usr/bin/time (GNU time, not the shell builtin) and reports the
median wall time, throughput over the uncompressed bytes, events/s (the `events` count of the
JSON output), the largest peak RSS, and how many times faster it is than the baseline measured
in the same run on the same file: json.load (after gzip.open for .gz) for JSON, protobuf's
C++-backed ParseFromString for XSpace (xspace_baseline.py). See bench/README.md.
"""

import argparse
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
GNU_TIME = "/usr/bin/time"
MIB = 1024 * 1024


class Case:
    def __init__(self, label, path, kind):
        self.label, self.path, self.kind = label, path, kind  # kind: json, json.gz, xspace


def uncompressed_size(path):
    if not path.endswith(".gz"):
        return os.path.getsize(path)
    size, inflater = 0, zlib.decompressobj(zlib.MAX_WBITS | 16)
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            size += len(inflater.decompress(chunk))
    return size


def corpus_cases(shared, work_dir):
    kineto_gz = os.path.join(shared, "corpus/kineto/v100_resnet_rank0.pt.trace.json.gz")
    plain = os.path.join(work_dir, "corpus_v100_resnet_rank0.json")
    if not os.path.exists(plain):
        with gzip.open(kineto_gz, "rb") as src, open(plain, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
    return [Case("corpus resnet json", plain, "json"),
            Case("corpus resnet json.gz", kineto_gz, "json.gz"),
            Case("corpus tf 8gpu xspace", os.path.join(
                shared, "corpus/xspace/tf_8gpu_multi_worker.xplane.pb"), "xspace")]


def generated(work_dir, name, command):
    """Runs a generator once; later bench runs reuse the file."""
    path = os.path.join(work_dir, name)
    if not os.path.exists(path):
        subprocess.run([sys.executable] + command + [path], check=True)
    return path


def generated_cases(work_dir, size_mb, suffix, shared):
    kineto = [os.path.join(HERE, "gen_kineto_trace.py"), "--size-mb", str(size_mb), "--from",
              os.path.join(shared, "corpus/kineto/v100_resnet_rank0.pt.trace.json.gz")]
    xspace = [os.path.join(HERE, "gen_xspace.py"), "--size-mb", str(size_mb), "--from",
              os.path.join(shared, "corpus/xspace/tf_8gpu_multi_worker.xplane.pb")]
    return [
        Case(f"gen {suffix} json", generated(work_dir, f"gen_{suffix}.json", kineto), "json"),
        Case(f"gen {suffix} json.gz", generated(work_dir, f"gen_{suffix}.json.gz", kineto),
             "json.gz"),
        Case(f"gen {suffix} xspace", generated(work_dir, f"gen_{suffix}.xplane.pb", xspace),
             "xspace"),
        Case(f"gen {suffix} xspace big planes", generated(
            work_dir, f"gen_{suffix}_lines.xplane.pb", xspace + ["--layout", "lines"]),
             "xspace"),
    ]


def time_fleetprof(fleetprof, path, runs, scratch):
    """Returns (wall seconds per run, max peak RSS bytes, events) or raises with stderr."""
    walls, peaks, events = [], [], None
    rss_file, out_file = os.path.join(scratch, "rss"), os.path.join(scratch, "out.json")
    for _ in range(runs):
        with open(out_file, "wb") as out:
            start = time.monotonic()
            result = subprocess.run([GNU_TIME, "-f", "%M", "-o", rss_file, fleetprof, "analyze",
                                     path, "--json"], stdout=out, stderr=subprocess.PIPE,
                                    text=True)
            walls.append(time.monotonic() - start)
        if result.returncode != 0:
            raise RuntimeError(result.stderr.strip().splitlines()[-1:] or ["(no stderr)"])
        with open(rss_file) as f:
            peaks.append(int(f.read().split()[-1]) * 1024)
        if events is None:
            with open(out_file) as f:
                events = json.load(f).get("events")
    return walls, max(peaks), events


BASELINE_JSON = ("import gzip, json, sys; p = sys.argv[1]; "
                 "json.load(gzip.open(p, 'rt') if p.endswith('.gz') else open(p))")


def time_baseline(case, runs):
    if case.kind == "xspace":
        command = [sys.executable, os.path.join(HERE, "xspace_baseline.py"), case.path]
    else:
        command = [sys.executable, "-c", BASELINE_JSON, case.path]
    walls = []
    for _ in range(runs):
        start = time.monotonic()
        subprocess.run(command, check=True, stderr=subprocess.DEVNULL)
        walls.append(time.monotonic() - start)
    return statistics.median(walls)


def print_row(cells, widths):
    print("  ".join(str(c).rjust(w) if i else str(c).ljust(w)
                    for i, (c, w) in enumerate(zip(cells, widths))))


HEADER = ["case", "MiB", "events", "median s", "MiB/s", "Mevents/s", "peak RSS MiB",
          "RSS/file", "python s", "speedup"]
WIDTHS = [32, 7, 10, 9, 7, 9, 12, 8, 9, 8]


def bench_case(case, args, scratch):
    size = uncompressed_size(case.path)
    try:
        walls, peak, events = time_fleetprof(args.fleetprof, case.path, args.runs, scratch)
    except RuntimeError as error:
        print_row([case.label, f"{size / MIB:.1f}", "FAILED: " + " ".join(error.args[0])],
                  WIDTHS[:3])
        return
    median = statistics.median(walls)
    if size / MIB <= args.baseline_max_mb:
        base = time_baseline(case, min(args.runs, args.baseline_runs))
        base_cells = [f"{base:.3f}", f"{base / median:.1f}x"]
    else:
        base_cells = ["skipped", "-"]
    rate = f"{events / median / 1e6:.2f}" if isinstance(events, int) else "?"
    print_row([case.label, f"{size / MIB:.1f}", events if events is not None else "?",
               f"{median:.3f}", f"{size / MIB / median:.0f}", rate, f"{peak / MIB:.1f}",
               f"{peak / size:.2f}"] + base_cells, WIDTHS)
    sys.stdout.flush()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fleetprof", default=os.path.join(REPO, "build/bin/fleetprof"))
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--baseline-runs", type=int, default=3,
                        help="runs of the Python baseline (at most --runs)")
    parser.add_argument("--size-mb", type=int, default=200, help="size of generated traces")
    parser.add_argument("--big", action="store_true", help="also 1024 MiB generated traces")
    parser.add_argument("--baseline-max-mb", type=float, default=300,
                        help="skip the Python baseline above this size (json.load of 1 GiB "
                             "needs >10 GiB of memory)")
    parser.add_argument("--shared", default=os.path.join(REPO, "../shared"))
    parser.add_argument("--work-dir", default=os.path.join(tempfile.gettempdir(),
                                                           "fleetprof_bench"),
                        help="where generated traces are written and reused")
    parser.add_argument("--only", help="run only cases whose label contains this text")
    args = parser.parse_args()
    if not os.path.exists(GNU_TIME):
        sys.exit(f"{GNU_TIME} not found: install Debian's `time` package")
    if not os.access(args.fleetprof, os.X_OK):
        sys.exit(f"fleetprof binary not found: {args.fleetprof}")

    os.makedirs(args.work_dir, exist_ok=True)
    cases = corpus_cases(args.shared, args.work_dir)
    cases += generated_cases(args.work_dir, args.size_mb, f"{args.size_mb}mb", args.shared)
    if args.big:
        cases += generated_cases(args.work_dir, 1024, "1024mb", args.shared)
    if args.only:
        cases = [c for c in cases if args.only in c.label]

    print(f"fleetprof: {args.fleetprof}; {args.runs} runs per case; {os.cpu_count()} CPUs; "
          f"generated traces in {args.work_dir}")
    print_row(HEADER, WIDTHS)
    with tempfile.TemporaryDirectory() as scratch:
        for case in cases:
            bench_case(case, args, scratch)


if __name__ == "__main__":
    main()
