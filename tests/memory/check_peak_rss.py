#!/usr/bin/python3
"""Checks that `fleetprof analyze` reads a large trace in bounded memory.

usage: check_peak_rss.py FLEETPROF WORKDIR --format kineto|xspace --corpus FILE
                         [--size-mb 200] [--max-rss-fraction F] [--layout planes|lines]

Generates a trace of at least --size-mb MiB with bench/gen_kineto_trace.py or
bench/gen_xspace.py into a temporary folder under WORKDIR (deleted afterwards), runs
`fleetprof analyze FILE --json` on it as a child process and fails unless the child's peak
RSS is below F × the file size. The peak is the kernel's ru_maxrss of that one child
(os.wait4), so the generator's own memory is never counted.
Exit 77 (ctest SKIP_RETURN_CODE) when the corpus file is missing, a failure under CI=true.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

SKIP = 77
BENCH_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench")
GENERATORS = {"kineto": ("gen_kineto_trace.py", "trace.json"),
              "xspace": ("gen_xspace.py", "trace.xplane.pb")}


def generate(args, work_dir):
    script, file_name = GENERATORS[args.format]
    path = os.path.join(work_dir, file_name)
    command = [sys.executable, os.path.join(BENCH_DIR, script), path,
               "--size-mb", str(args.size_mb), "--from", args.corpus]
    if args.format == "xspace":
        command += ["--layout", args.layout]
    subprocess.run(command, check=True)
    return path


def analyze_peak_rss(fleetprof, trace, json_out):
    """Runs the analysis; returns (exit status, peak RSS in bytes, wall seconds)."""
    start = time.monotonic()
    with open(json_out, "wb") as out:
        child = subprocess.Popen([fleetprof, "analyze", trace, "--json"], stdout=out)
        _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)  # already reaped by wait4
    return child.returncode, usage.ru_maxrss * 1024, time.monotonic() - start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("fleetprof")
    parser.add_argument("work_dir")
    parser.add_argument("--format", choices=sorted(GENERATORS), required=True)
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--size-mb", type=float, default=200)
    parser.add_argument("--max-rss-fraction", type=float, default=None,
                        help="default 0.5 for kineto, 1.0 for xspace")
    parser.add_argument("--layout", choices=["planes", "lines"], default="planes")
    args = parser.parse_args()
    fraction = args.max_rss_fraction or (0.5 if args.format == "kineto" else 1.0)

    if not os.path.exists(args.corpus):
        if os.environ.get("CI") == "true":
            sys.exit(f"FAIL: corpus file missing (CI=true): {args.corpus}")
        print(f"SKIP: corpus file missing: {args.corpus}")
        sys.exit(SKIP)

    os.makedirs(args.work_dir, exist_ok=True)
    work_dir = tempfile.mkdtemp(prefix=f"{args.format}_", dir=args.work_dir)
    try:
        trace = generate(args, work_dir)
        size = os.path.getsize(trace)
        json_out = os.path.join(work_dir, "summary.json")
        status, peak, seconds = analyze_peak_rss(args.fleetprof, trace, json_out)
        if status != 0:
            sys.exit(f"FAIL: fleetprof analyze exited {status} on {size} byte {args.format}")
        with open(json_out) as f:
            summary = json.load(f)
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)

    limit = fraction * size
    print(f"{args.format} ({args.layout if args.format == 'xspace' else 'plain json'}): "
          f"file {size / 2**20:.1f} MiB, peak RSS {peak / 2**20:.1f} MiB "
          f"({peak / size:.3f} of the file, limit {fraction}), {seconds:.2f} s, "
          f"{summary.get('events', '?')} events, {len(summary.get('devices', []))} devices")
    if not summary.get("devices"):
        sys.exit("FAIL: the summary has no devices; the analysis did not see the trace")
    if peak >= limit:
        sys.exit(f"FAIL: peak RSS {peak} bytes is not below {fraction} x file size ({limit:.0f})")


if __name__ == "__main__":
    main()
