#!/usr/bin/env python3
"""A fake PyTorch process for testing fleetprof's Kineto endpoint.

It speaks libkineto's on-demand IPC the way a process started with KINETO_USE_DAEMON=1 does
(spec/PROTOCOLS.md section 2), written from the spec and independently of the C++ code under
test: the byte layouts come from struct.pack and the addresses are spelled out here, so a
wrong struct padding or address length on either side shows up as a failed exchange.

- binds its own endpoint "dynoconfigclient<uuid>" (abstract, with libkineto's trailing NUL,
  or a file in $KINETO_IPC_SOCKET_DIR / --socket-dir),
- polls the daemon ("\\0dynolog\\0" or DIR/dynolog) every --interval-ms with a "req" message:
  type 2 (activities) normally, type 0 (busy) for the first --busy-polls polls and while it
  "traces",
- on a non-empty config: "traces" for ACTIVITIES_DURATION_MSECS (capped by --max-trace-ms),
  then writes --trace-file (gunzipped if .gz) to ACTIVITIES_LOG_FILE with _<pid> inserted,
  as <name>.tmp renamed into place; --never-write skips the write.

Prints one JSON object per line: start, config, wrote / not_written, and a summary at exit
(after --polls polls, or on SIGTERM/SIGINT).
"""
import argparse
import gzip
import json
import os
import select
import shutil
import signal
import socket
import struct
import sys
import time
import uuid

HEADER = struct.Struct("=Q32s")  # { uint64 size; char type[32]; } native byte order
REQ = struct.Struct("=iiq")  # { int32 type; int32 n; int64 jobid; } then int32 pids[n]
assert HEADER.size == 40 and REQ.size == 16

TYPE_BUSY = 0
TYPE_ACTIVITIES = 2


def emit(**fields):
    print(json.dumps(fields), flush=True)


def daemon_address(socket_dir):
    if socket_dir:
        return os.path.join(socket_dir, "dynolog")
    return b"\0dynolog\0"  # 9 bytes: addrlen = offsetof(sun_path) + 9


def own_address(socket_dir, name):
    if socket_dir:
        return os.path.join(socket_dir, name)
    return b"\0" + name.encode() + b"\0"


def ancestry(limit=10):
    """This process and its ancestors, leaf first, from /proc/<pid>/stat."""
    pids = [os.getpid()]
    while len(pids) < limit:
        with open("/proc/%d/stat" % pids[-1]) as f:
            stat = f.read()
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        if ppid <= 0:
            break
        pids.append(ppid)
    return pids


def trace_path_for(log_file, pid):
    """libkineto's rule, restated: _<pid> before .pt.trace.json, else before .json."""
    for suffix in (".pt.trace.json", ".json"):
        at = log_file.find(suffix)
        if at >= 0:
            return log_file[:at] + "_%d" % pid + log_file[at:]
    return log_file


def parse_config(text):
    values = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            values[key.strip()] = value.strip()
    return values


def write_trace(source, path):
    tmp = path + ".tmp"
    if source is None:
        with open(tmp, "w") as out:
            out.write('{"traceEvents": []}\n')
    else:
        opener = gzip.open if source.endswith(".gz") else open
        with opener(source, "rb") as src, open(tmp, "wb") as out:
            shutil.copyfileobj(src, out, 1 << 20)
    os.rename(tmp, path)


class Client:
    def __init__(self, args):
        self.args = args
        self.daemon = daemon_address(args.socket_dir)
        self.name = "dynoconfigclient" + str(uuid.uuid4())
        self.address = own_address(args.socket_dir, self.name)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.address)
        self.pids = ancestry()
        if args.claim_ancestors:  # a liar: its own pid, then ancestors of its choosing
            self.pids = [self.pids[0]] + [int(p) for p in args.claim_ancestors.split(",")]
        self.stats = {"polls": 0, "replies": 0, "configs": 0, "timeouts": 0, "late": 0,
                      "send_errors": 0, "configs_while_busy": 0}
        self.latencies_ms = []

    def close(self):
        self.sock.close()
        if isinstance(self.address, str):
            try:
                os.unlink(self.address)
            except FileNotFoundError:
                pass

    def drain_late_replies(self):
        while select.select([self.sock], [], [], 0)[0]:
            self.sock.recv(1 << 17)
            self.stats["late"] += 1

    def poll(self, poll_type):
        """Sends one "req" and waits for its reply; returns the config text or None."""
        payload = REQ.pack(poll_type, len(self.pids), self.args.job_id)
        payload += struct.pack("=%di" % len(self.pids), *self.pids)
        message = HEADER.pack(len(payload), b"req") + payload
        self.stats["polls"] += 1
        start = time.monotonic()
        try:
            self.sock.sendto(message, self.daemon)
        except OSError as e:
            self.stats["send_errors"] += 1
            if self.stats["send_errors"] <= 3:
                emit(event="send_error", error=str(e))
            return None
        deadline = start + self.args.reply_timeout_ms / 1000.0
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.sock], [], [], left)[0]:
                self.stats["timeouts"] += 1
                return None
            data, sender = self.sock.recvfrom(1 << 17)
            if len(data) < HEADER.size:
                continue
            size, mtype = HEADER.unpack_from(data)
            if mtype.rstrip(b"\0") != b"req" or len(data) != HEADER.size + size:
                emit(event="bad_reply", length=len(data), size=size, type=repr(mtype))
                continue
            self.latencies_ms.append((time.monotonic() - start) * 1000.0)
            self.stats["replies"] += 1
            return data[HEADER.size:].decode()


def percentile(values, p):
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100.0 * (len(ordered) - 1))))]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--socket-dir", default=os.environ.get("KINETO_IPC_SOCKET_DIR", ""))
    parser.add_argument("--interval-ms", type=float, default=100)
    parser.add_argument("--reply-timeout-ms", type=float, default=1000)
    parser.add_argument("--busy-polls", type=int, default=0)
    parser.add_argument("--polls", type=int, default=0, help="stop after N polls (0: never)")
    parser.add_argument("--claim-ancestors", default="",
                        help="comma-separated pids to send as its ancestors instead of the real ones")
    parser.add_argument("--job-id", type=int, default=int(os.environ.get("SLURM_JOB_ID", "0")))
    parser.add_argument("--trace-file", help="trace to write when asked (.gz is gunzipped)")
    parser.add_argument("--never-write", action="store_true")
    parser.add_argument("--max-trace-ms", type=float, default=2000)
    parser.add_argument("--report-latencies", action="store_true")
    parser.add_argument("--start-at", type=float, default=0,
                        help="unix time of the first poll (lets many clients start together)")
    args = parser.parse_args()

    stopping = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stopping.append(True))

    client = Client(args)
    emit(event="start", pid=os.getpid(), ancestry=client.pids, job_id=args.job_id,
         address=repr(client.address), daemon=repr(client.daemon))
    while not stopping and time.time() < args.start_at:
        # The clock moves between the test and the sleep: never ask for a negative sleep.
        time.sleep(max(0.0, min(0.05, args.start_at - time.time())))
    busy_left = args.busy_polls
    tracing_until = None
    log_file = ""
    try:
        while not stopping and (args.polls == 0 or client.stats["polls"] < args.polls):
            started = time.monotonic()
            client.drain_late_replies()
            if tracing_until is not None or busy_left > 0:
                poll_type = TYPE_BUSY
                busy_left = max(0, busy_left - 1)
            else:
                poll_type = TYPE_ACTIVITIES
            config = client.poll(poll_type)
            if config:
                client.stats["configs"] += 1
                if poll_type == TYPE_BUSY:
                    client.stats["configs_while_busy"] += 1
                emit(event="config", poll=client.stats["polls"], poll_type=poll_type, text=config)
                values = parse_config(config)
                log_file = values.get("ACTIVITIES_LOG_FILE", "")
                duration = float(values.get("ACTIVITIES_DURATION_MSECS", "0") or 0)
                tracing_until = time.monotonic() + min(duration, args.max_trace_ms) / 1000.0
            if tracing_until is not None and time.monotonic() >= tracing_until:
                tracing_until = None
                path = trace_path_for(log_file, os.getpid()) if log_file else ""
                if args.never_write or not path:
                    emit(event="not_written", path=path)
                else:
                    try:
                        write_trace(args.trace_file, path)
                        emit(event="wrote", path=path)
                    except OSError as e:
                        emit(event="write_failed", path=path, error=str(e))
            time.sleep(max(0.0, args.interval_ms / 1000.0 - (time.monotonic() - started)))
    finally:
        client.close()
    summary = dict(client.stats)
    summary["latency_ms"] = {"p50": percentile(client.latencies_ms, 50),
                             "p99": percentile(client.latencies_ms, 99),
                             "max": max(client.latencies_ms) if client.latencies_ms else None}
    if args.report_latencies:
        summary["latencies_ms"] = [round(x, 4) for x in client.latencies_ms]
    emit(event="summary", **summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
