#!/usr/bin/python3
"""Crash safety: kill -9 the server at random points during concurrent uploads, many times.

usage: crash_loop.py BIN_DIR WORK_DIR --corpus FILE [--corpus FILE…] [--iterations 100]
                     [--uploads 4] [--seed 1]

Each iteration starts fleetprof-server on the same data folder, then checks that
  * the database opens (the server gets ready),
  * every listed profile answers every query (profile, ops, kernels, breakdown, a trace window,
    the export of its original file) with its file's result: kernels and ops equal to
    `fleetprof analyze`, the exported bytes equal to the file. Nothing is half visible,
  * every upload interrupted by the previous kill resumes (same --upload_id) to exactly that
    result, once: a profile id is never made twice for one upload id,
then starts --uploads concurrent uploads of the corpus files and kills the server (and the
uploading clients) with SIGKILL after a random delay. A last round resumes what the last kill
interrupted and checks everything again.
"""

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SKIP = 77


def fail(message):
    sys.exit(f"FAIL: {message}")


class Server:
    def __init__(self, bin_dir, data_dir, work_dir):
        ready = os.path.join(work_dir, "ready.json")
        if os.path.exists(ready):
            os.remove(ready)
        self.log = open(os.path.join(work_dir, "server.log"), "ab")
        self.process = subprocess.Popen(
            [os.path.join(bin_dir, "fleetprof-server"), "--grpc_addr=127.0.0.1:0", "--http_addr=127.0.0.1:0",
             f"--data_dir={data_dir}", f"--ready_file={ready}", "--log_level=warn", "--retention_check_s=3600"],
            stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + 60
        while not os.path.exists(ready) or os.path.getsize(ready) == 0:
            if self.process.poll() is not None:
                fail(f"the server exited {self.process.returncode} at start: the database did not open "
                     f"(see {self.log.name})")
            if time.monotonic() > deadline:
                fail("the server did not get ready within 60 s")
            time.sleep(0.02)
        with open(ready) as f:
            self.grpc = json.load(f)["grpc"]

    def kill(self):
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()
        self.log.close()


def cli(bin_dir, server, *args):
    done = subprocess.run([os.path.join(bin_dir, "fleetprof"), "--server", server, *args, "--json"],
                          capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout, done.stderr


def expected_results(bin_dir, corpus):
    """`fleetprof analyze` of each file: the kernels and ops its profile must have."""
    expected = {}
    for path in corpus:
        done = subprocess.run([os.path.join(bin_dir, "fleetprof"), "analyze", path, "--json"],
                              capture_output=True, text=True, check=True)
        summary = json.loads(done.stdout)
        expected[os.path.basename(path)] = (summary["kernels"], summary["ops"])
    return expected


def check_store(bin_dir, server, expected, uploads, corpus, work_dir, verified, rng):
    """Every listed profile answers every query with its file's result; returns them by upload id.

    Profiles `verified` after an earlier restart must still be listed under the same id; all
    queries run again on the new ones and on 3 old ones picked at random (all of them each time
    would make the loop quadratic)."""
    status, out, err = cli(bin_dir, server, "profiles", "--limit", "100000")
    if status != 0:
        fail(f"profiles: {err.strip()}")
    listing = json.loads(out)
    if listing.get("unreadable"):
        fail(f"unreadable profiles after a crash: {listing['unreadable']}")
    by_upload = {}
    old = [p["profile_id"] for p in listing["profiles"] if verified.get(p["labels"].get("crash_upload")) == p["profile_id"]]
    recheck = set(rng.sample(old, min(3, len(old))))
    for p in listing["profiles"]:
        pid = p["profile_id"]
        upload_id = p["labels"].get("crash_upload")
        if upload_id in by_upload:
            fail(f"upload {upload_id} made two profiles: {by_upload[upload_id]} and {pid}")
        by_upload[upload_id] = pid
        if verified.get(upload_id) == pid and pid not in recheck:
            continue
        exported = os.path.join(work_dir, "exported")
        for query in (["profile", pid], ["ops", pid], ["kernels", pid], ["breakdown", pid],
                      ["trace", pid, "--resolution_ns", "1000000"],
                      ["export", pid, "--format", "original", "-o", exported]):
            status, out, err = cli(bin_dir, server, *query)
            if status != 0:
                fail(f"listed profile {pid} does not answer '{' '.join(query)}': {err.strip()}")
        kernels = json.loads(cli(bin_dir, server, "kernels", pid)[1])["kernels"]
        ops = json.loads(cli(bin_dir, server, "ops", pid)[1])["ops"]
        if upload_id is None or upload_id not in uploads:
            fail(f"profile {pid} does not come from an upload of this test: {p}")
        if (kernels, ops) != expected[uploads[upload_id]]:
            fail(f"profile {pid} (upload {upload_id}, {uploads[upload_id]}) differs from fleetprof analyze")
        source = next(c for c in corpus if os.path.basename(c) == uploads[upload_id])
        with open(exported, "rb") as a, open(source, "rb") as b:
            if a.read() != b.read():
                fail(f"profile {pid}: its exported original differs from {source}")
        verified[upload_id] = pid
    for upload_id, pid in verified.items():
        if by_upload.get(upload_id) != pid:
            fail(f"profile {pid} of upload {upload_id} was listed before a restart and is not now")
    return by_upload


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("bin_dir")
    parser.add_argument("work_dir")
    parser.add_argument("--corpus", action="append", required=True)
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--uploads", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-delay-s", type=float, default=0.4)
    args = parser.parse_args()
    for path in args.corpus:
        if not os.path.exists(path):
            if os.environ.get("CI") == "true":
                fail(f"corpus file missing (CI=true): {path}")
            print(f"SKIP: corpus file missing: {path}")
            sys.exit(SKIP)
    rng = random.Random(args.seed)
    os.makedirs(args.work_dir, exist_ok=True)
    work_dir = tempfile.mkdtemp(prefix="crash_", dir=args.work_dir)
    data_dir = os.path.join(work_dir, "data")
    expected = expected_results(args.bin_dir, args.corpus)
    uploads = {}       # upload id -> file base name
    interrupted = []   # upload ids the last kill may have cut short
    resumed = committed_during = 0
    verified = {}      # upload id -> profile id, checked with every query once
    started = time.monotonic()
    try:
        for iteration in range(args.iterations + 1):
            server = Server(args.bin_dir, data_dir, work_dir)
            before = check_store(args.bin_dir, server.grpc, expected, uploads, args.corpus, work_dir, verified, rng)
            for upload_id in interrupted:
                path = next(p for p in args.corpus if os.path.basename(p) == uploads[upload_id])
                status, out, err = cli(args.bin_dir, server.grpc, "upload", path, "--job", "crash",
                                       "--upload_id", upload_id, "--label", f"crash_upload={upload_id}")
                if status != 0:
                    fail(f"iteration {iteration}: upload {upload_id} does not resume: {err.strip()}")
                profile_id = json.loads(out)["profile_id"]
                if upload_id in before and before[upload_id] != profile_id:
                    fail(f"upload {upload_id} was committed as {before[upload_id]}, resumed as {profile_id}")
                resumed += upload_id not in before
            after = check_store(args.bin_dir, server.grpc, expected, uploads, args.corpus, work_dir, verified, rng)
            if set(after) != set(uploads):
                fail(f"iteration {iteration}: uploads without a profile after resuming: "
                     f"{sorted(set(uploads) - set(after))}")
            if iteration == args.iterations:
                server.kill()
                break
            # Concurrent uploads, then SIGKILL at a random point.
            clients = []
            interrupted = []
            for k in range(args.uploads):
                path = rng.choice(args.corpus)
                upload_id = f"crash-{iteration}-{k}"
                uploads[upload_id] = os.path.basename(path)
                interrupted.append(upload_id)
                clients.append(subprocess.Popen(
                    [os.path.join(args.bin_dir, "fleetprof"), "--server", server.grpc, "upload", path, "--job",
                     "crash", "--upload_id", upload_id, "--label", f"crash_upload={upload_id}", "--json"],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            time.sleep(rng.uniform(0, args.max_delay_s))
            server.kill()
            for c in clients:
                committed_during += c.poll() == 0
                c.kill()
                c.wait()
            if iteration % 10 == 9:
                print(f"{iteration + 1} kills, {len(uploads)} uploads, {resumed} resumed after a kill, "
                      f"{time.monotonic() - started:.0f} s", flush=True)
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)
    print(f"PASS: {args.iterations} kill -9 of the server during {args.uploads} concurrent uploads; "
          f"{len(uploads)} uploads, {committed_during} finished before their kill, {resumed} resumed after "
          f"one; every profile answered every query and equalled fleetprof analyze; "
          f"{time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
