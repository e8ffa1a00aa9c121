#!/usr/bin/python3
"""Checks `fleetprof analyze --json` against PyTorch's own key_averages() on real runs.

usage: check_key_averages.py FLEETPROF WORKDIR

Runs make_traces.py (beside this file) into WORKDIR, then for each model compares every
key_averages() row with fleetprof's op of the same name: counts must be equal and
|total_ns - cpu_time_total_us * 1000| <= 1000 ns per call (docs/analysis.md, Op breakdown: torch
agrees within 1 µs per call).

Name matching: key_averages() groups by event name, as fleetprof does, except that torch folds
ProfilerStep#N into one row "ProfilerStep*"; a row whose name ends in '*' is compared with the
sum of fleetprof's ops whose names start with the text before the '*'. Every row found in the
trace is checked; at least 90% of the rows must be found (a row can only be missing if torch
counted an event the exported trace lacks). fleetprof ops that torch has no row for are listed.

Without torch the test skips (exit 77, registered as SKIP_RETURN_CODE), or fails under CI=true.
"""

import json
import os
import subprocess
import sys

SKIP = 77
TORCH_MISSING = 3  # make_traces.py's exit status when torch does not import
NS_PER_CALL_TOLERANCE = 1000
MIN_FOUND_FRACTION = 0.9
HERE = os.path.dirname(os.path.abspath(__file__))


def make_traces(work_dir):
    """Returns the model names profiled, or exits (skip / fail) when torch is missing."""
    result = subprocess.run([sys.executable, os.path.join(HERE, "make_traces.py"), work_dir],
                            capture_output=True, text=True)
    if result.returncode == TORCH_MISSING:
        message = f"torch is not importable by {sys.executable}: " + result.stderr.strip()
        if os.environ.get("CI") == "true":
            sys.exit("FAIL (CI=true requires torch): " + message)
        print("SKIP: " + message)
        sys.exit(SKIP)
    if result.returncode != 0:
        sys.exit(f"make_traces.py failed ({result.returncode}):\n{result.stderr}")
    return [line.split(":")[0] for line in result.stdout.splitlines() if line.strip()]


def fleetprof_ops(fleetprof, trace):
    result = subprocess.run([fleetprof, "analyze", trace, "--json"], capture_output=True,
                            text=True)
    if result.returncode != 0:
        raise RuntimeError(f"fleetprof analyze {trace} exited {result.returncode}: "
                           f"{result.stderr.strip()}")
    return {op["name"]: op for op in json.loads(result.stdout).get("ops", [])}


def matching_ops(row_name, ops):
    if row_name.endswith("*"):
        return [op for name, op in ops.items() if name.startswith(row_name[:-1])]
    return [ops[row_name]] if row_name in ops else []


def check_model(fleetprof, work_dir, model):
    """Returns a list of failure lines for one model (empty when it agrees)."""
    ops = fleetprof_ops(fleetprof, os.path.join(work_dir, model + ".json"))
    with open(os.path.join(work_dir, model + ".key_averages.json")) as f:
        rows = json.load(f)
    failures, found, matched_names = [], 0, set()
    worst_ns_per_call = 0.0
    for row in rows:
        matches = matching_ops(row["name"], ops)
        if not matches:
            continue
        found += 1
        matched_names.update(op["name"] for op in matches)
        count = sum(op["count"] for op in matches)
        total_ns = sum(op["total_ns"] for op in matches)
        expected_ns = round(row["cpu_time_total_us"] * 1000)
        if count != row["count"]:
            failures.append(f"{model}: {row['name']}: count {count}, torch {row['count']}")
            continue
        diff = abs(total_ns - expected_ns)
        worst_ns_per_call = max(worst_ns_per_call, diff / max(count, 1))
        if diff > NS_PER_CALL_TOLERANCE * count:
            failures.append(f"{model}: {row['name']}: total_ns {total_ns}, torch "
                            f"{expected_ns} (off by {diff} ns over {count} calls)")
    missing = [row["name"] for row in rows if not matching_ops(row["name"], ops)]
    extra = sorted(set(ops) - matched_names)
    print(f"{model}: {found}/{len(rows)} key_averages rows found in fleetprof's ops, "
          f"{len(failures)} disagree, worst |diff| {worst_ns_per_call:.0f} ns/call; "
          f"missing {missing}; fleetprof-only ops {extra}")
    if found < MIN_FOUND_FRACTION * len(rows):
        failures.append(f"{model}: only {found} of {len(rows)} key_averages rows found")
    return failures


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: check_key_averages.py FLEETPROF WORKDIR")
    fleetprof, work_dir = sys.argv[1], sys.argv[2]
    models = make_traces(work_dir)
    if len(models) < 3:
        sys.exit(f"expected at least 3 profiled models, got {models}")
    failures = []
    for model in models:
        failures += check_model(fleetprof, work_dir, model)
    for line in failures:
        print("FAIL " + line)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
