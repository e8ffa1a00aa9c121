#!/usr/bin/python3
"""Hostile traces are refused in bounded memory, by `fleetprof analyze` and on upload.

usage: check_bombs.py BIN_DIR WORKDIR --corpus GOOD_TRACE

Writes, under a temporary folder in WORKDIR (deleted afterwards):
  xspace_events  41 KB of gzip: one XSpace device line of 20 million empty events
                 (before the limits: gigabytes of records)
  json_events    5 million identical one-kernel events, gzip
  json_names     16,384 distinct 64 KiB kernel names, gzip (1 GiB of names; before: 3 GB)
  json_spaces    1 GiB of whitespace inside a trace, gzip, read with --max_trace_mb=100 (400 on upload)
  json_long_name one 64 MiB kernel name: accepted, the name cut to 64 KiB

Each must end as the table below says, with the CLI's peak RSS (ru_maxrss of that child
alone) under 512 MiB. Then the same files are uploaded to a fresh fleetprof-server: each
refused one gets the same error, nothing of it stays stored, the server's peak RSS (VmHWM)
stays under 512 MiB, and it still indexes and answers a real trace afterwards.
"""

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from protobuf_wire import encode_length_delimited  # noqa: E402

MAX_RSS = 512 << 20
SKIP = 77


def length_delimited(field, payload):
    return encode_length_delimited(field, len(payload)) + payload


def write_xspace_events(path, events):
    # A device plane with one "Stream #1" line whose events are empty messages (tag 4, length 0).
    line_head = length_delimited(2, b"Stream #1")
    body_len = len(line_head) + 2 * events
    plane_head = length_delimited(2, b"/device:GPU:0")
    line_tag = encode_length_delimited(3, body_len)
    plane_len = len(plane_head) + len(line_tag) + body_len
    with gzip.open(path, "wb", compresslevel=9) as f:
        f.write(encode_length_delimited(1, plane_len) + plane_head + line_tag + line_head)
        block = b"\x22\x00" * 1_000_000
        for _ in range(events // 1_000_000):
            f.write(block)


def write_json_names(path, names, name_bytes):
    with gzip.open(path, "wb", compresslevel=1) as f:
        f.write(b'{"traceEvents":[')
        filler = b"n" * name_bytes
        for i in range(names):
            name = b"%d_" % i + filler[: name_bytes - 8]
            f.write(b'%s{"ph":"X","cat":"kernel","name":"%s","ts":%d,"dur":1,"pid":0,"tid":7,'
                    b'"args":{"device":0}}' % (b"," if i else b"", name, i * 10))
        f.write(b"]}")


def write_json_events(path, events):
    with gzip.open(path, "wb", compresslevel=1) as f:
        f.write(b'{"traceEvents":[')
        event = b'{"ph":"X","cat":"kernel","name":"k","ts":1,"dur":1,"pid":0,"tid":7,"args":{"device":0}},'
        block = event * 100_000
        for _ in range(events // 100_000):
            f.write(block)
        f.write(event[:-1] + b"]}")


def write_json_spaces(path, mib):
    with gzip.open(path, "wb", compresslevel=1) as f:
        f.write(b'{"traceEvents":[')
        block = b" " * (1 << 20)
        for _ in range(mib):
            f.write(block)
        f.write(b'{"ph":"X","cat":"kernel","name":"k","ts":0,"dur":1,"pid":0,"tid":7}]}')


def write_json_long_name(path, mib):
    with gzip.open(path, "wb", compresslevel=1) as f:
        f.write(b'{"traceEvents":[{"ph":"X","cat":"kernel","name":"')
        block = b"\xc3\xa9" * (1 << 19)  # é, so the cut must fall on a character boundary
        for _ in range(mib):
            f.write(block)
        f.write(b'","ts":0,"dur":1,"pid":0,"tid":7,"args":{"device":0}}]}')


# name -> (writer, extra CLI flags, expected stderr text or None for success)
CASES = {
    "xspace_events.xplane.pb.gz": (lambda p: write_xspace_events(p, 20_000_000), [],
                                   "events (at byte"),
    "json_events.json.gz": (lambda p: write_json_events(p, 5_000_000), [],
                            "raise --max_trace_events to read it"),
    "json_names.json.gz": (lambda p: write_json_names(p, 16384, 64 << 10), [],
                           "raise --max_trace_name_mb to read it"),
    "json_spaces.json.gz": (lambda p: write_json_spaces(p, 1024), ["--max_trace_mb=100"],
                            "MiB after decompression (at byte"),
    "json_long_name.json.gz": (lambda p: write_json_long_name(p, 64), [], None),
}


def run_peak(command):
    """Runs `command`; returns (exit status, stdout, stderr, peak RSS bytes of that child)."""
    out = tempfile.TemporaryFile()
    err = tempfile.TemporaryFile()
    child = subprocess.Popen(command, stdout=out, stderr=err)
    _, status, usage = os.wait4(child.pid, 0)
    out.seek(0)
    err.seek(0)
    return os.waitstatus_to_exitcode(status), out.read().decode(), err.read().decode(), usage.ru_maxrss * 1024


def fail(message):
    sys.exit(f"FAIL: {message}")


def check_result(what, status, stdout, stderr, expected):
    if expected is None:
        if status != 0:
            fail(f"{what}: exit {status}: {stderr.strip()}")
        return
    if status == 0:
        fail(f"{what}: accepted, expected a refusal saying '{expected}'")
    if expected not in stderr:
        fail(f"{what}: error '{stderr.strip()}' does not say '{expected}'")


def start_server(bin_dir, work_dir, flags):
    data_dir = os.path.join(work_dir, "server-data")
    ready = os.path.join(work_dir, "ready.json")
    server = subprocess.Popen([os.path.join(bin_dir, "fleetprof-server"), "--grpc_addr=127.0.0.1:0",
                               "--http_addr=127.0.0.1:0", f"--data_dir={data_dir}",
                               f"--ready_file={ready}", "--log_level=warn"] + flags)
    deadline = time.monotonic() + 60
    while not os.path.exists(ready) or os.path.getsize(ready) == 0:
        if server.poll() is not None or time.monotonic() > deadline:
            fail("fleetprof-server did not start")
        time.sleep(0.05)
    with open(ready) as f:
        return server, json.load(f)["grpc"]


def peak_rss_of(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("bin_dir")
    parser.add_argument("work_dir")
    parser.add_argument("--corpus", required=True, help="a real trace the server must index afterwards")
    args = parser.parse_args()
    if not os.path.exists(args.corpus):
        if os.environ.get("CI") == "true":
            fail(f"corpus file missing (CI=true): {args.corpus}")
        print(f"SKIP: corpus file missing: {args.corpus}")
        sys.exit(SKIP)
    cli = os.path.join(args.bin_dir, "fleetprof")
    os.makedirs(args.work_dir, exist_ok=True)
    work_dir = tempfile.mkdtemp(prefix="bombs_", dir=args.work_dir)
    server = None
    try:
        files = {}
        for name, (writer, _, _) in CASES.items():
            path = os.path.join(work_dir, name)
            writer(path)
            files[name] = path
            print(f"wrote {name}: {os.path.getsize(path) / 1024:.0f} KiB of gzip")

        for name, (_, flags, expected) in CASES.items():
            start = time.monotonic()
            status, stdout, stderr, peak = run_peak([cli, "analyze", files[name], "--json"] + flags)
            check_result(f"analyze {name}", status, stdout, stderr, expected)
            said = stderr.strip() if expected else "accepted"
            print(f"analyze {name}: {said} | peak RSS {peak / 2**20:.0f} MiB, {time.monotonic() - start:.1f} s")
            if peak >= MAX_RSS:
                fail(f"analyze {name}: peak RSS {peak} bytes, limit {MAX_RSS}")
            if expected is None:
                kernel = json.loads(stdout)["kernels"][0]["name"]
                if len(kernel.encode()) != 64 << 10 or kernel != "\u00e9" * (32 << 10):
                    fail(f"analyze {name}: the long name was not cut to 64 KiB of whole characters")

        # The server reads the same limits from the same flags; --max_trace_mb=400 for all.
        server, grpc = start_server(args.bin_dir, work_dir, ["--max_trace_mb=400"])
        for name, (_, _, expected) in CASES.items():
            status, stdout, stderr, _ = run_peak([cli, "--server", grpc, "upload", files[name],
                                                  "--job", "bombs", "--json"])
            check_result(f"upload {name}", status, stdout, stderr, expected)
            print(f"upload {name}: {stderr.strip() if expected else 'accepted'}")
        status, stdout, stderr, _ = run_peak([cli, "--server", grpc, "upload", args.corpus, "--job", "good",
                                              "--json"])
        check_result("upload of a real trace after the bombs", status, stdout, stderr, None)
        good = json.loads(stdout)["profile_id"]
        status, stdout, stderr, _ = run_peak([cli, "--server", grpc, "kernels", good, "--json"])
        check_result("kernels of the real trace", status, stdout, stderr, None)
        if not json.loads(stdout)["kernels"]:
            fail("the real trace has no kernels after the bombs")
        status, stdout, stderr, _ = run_peak([cli, "--server", grpc, "profiles", "--json"])
        jobs = sorted(p["job"] for p in json.loads(stdout)["profiles"])
        if jobs != ["bombs", "good"]:  # the long-name trace is accepted, nothing else stays
            fail(f"stored profiles after the bombs: {jobs}, expected ['bombs', 'good']")
        peak = peak_rss_of(server.pid)
        print(f"server: peak RSS {peak / 2**20:.0f} MiB over every upload; still serving")
        if peak >= MAX_RSS:
            fail(f"server peak RSS {peak} bytes, limit {MAX_RSS}")
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        shutil.rmtree(work_dir, ignore_errors=True)
    print("PASS")


if __name__ == "__main__":
    main()
