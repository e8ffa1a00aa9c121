#!/usr/bin/env python3
"""A fake PyTorch process for testing fleetprof's Kineto endpoint.

It speaks libkineto's on-demand IPC the way a process started with KINETO_USE_DAEMON=1 does
(docs/protocols.md, PyTorch on-demand tracing), written from the spec and independently of the C++
code under test: the byte layouts come from struct.pack and the addresses are spelled out here, so a
wrong struct padding or address length on either side shows up as a failed exchange.

- binds its own endpoint "dynoconfigclient<uuid>" (abstract, with libkineto's trailing NUL,
  or a file in $KINETO_IPC_SOCKET_DIR / --socket-dir),
- polls the daemon ("\\0dynolog\\0" or DIR/dynolog) every --interval-ms (5000 by default, as
  libkineto does: a config waits up to one interval before the job even sees it) with a "req"
  message: type 2 (activities) normally, type 0 (busy) during its first --busy-polls polls and
  first --busy-ms ms, and while its profiler is warming up, tracing or taking a memory
  snapshot. A config handed to a busy poll is counted and dropped, as a busy libkineto drops a
  second request.
- decides what to do with a non-empty config the way libkineto does (docs/protocols.md,
  "When a time-based trace may start"). Real PyTorch jobs follow these rules, so a capture that
  breaks them must fail here too, not only on a real fleet:
  * PROFILE_MEMORY=true asks for a memory snapshot instead of a trace: the job records
    allocations for PROFILE_MEMORY_DURATION_MSECS (1000 by default) and saves them to its own
    default snapshot path, whatever ACTIVITIES_LOG_FILE says. Here that is
    memory_snapshot_<pid>_<n>.pickle in --memory-snapshot-dir; no trace is written.
  * Iteration mode (ACTIVITIES_ITERATIONS or PROFILE_START_ITERATION present) starts at an
    iteration boundary and consults no clock: the trace starts at once.
  * Duration mode warms up for ACTIVITIES_WARMUP_PERIOD_SECS (5 by default) before a trace.
    With no PROFILE_START_TIME (or 0) libkineto picks one itself: the poll that brought the
    config + warm-up + 2 s (two ticks of its 1 s controller loop). A start time more than 10 s
    old makes the config invalid; one in the past, or nearer than the warm-up, is refused. A
    refused config produces no trace at all and the job says so only in its own log (stderr
    here), so the daemon never learns of it.
  An accepted trace waits for its start (polling busy meanwhile), "traces" for
  ACTIVITIES_DURATION_MSECS (libkineto's default 500 in duration mode, 0 in iteration mode;
  capped by --max-trace-ms), then writes --trace-file (gunzipped if .gz) to ACTIVITIES_LOG_FILE
  with _<pid> inserted, as <name>.tmp renamed into place; --never-write skips that write.

Prints one JSON object per line: start, config, trace_scheduled, refused, wrote / not_written /
write_failed, memory_snapshot, bad_reply, send_error, and a summary at exit (after --polls polls,
or on SIGTERM/SIGINT). Times in events (at_ms, start_ms) are wall-clock ms since the epoch.
"""
import argparse
import collections
import gzip
import json
import math
import os
import pickle
import select
import shutil
import signal
import socket
import struct
import sys
import tempfile
import time
import uuid

HEADER = struct.Struct("=Q32s")  # { uint64 size; char type[32]; } native byte order
REQ = struct.Struct("=iiq")  # { int32 type; int32 n; int64 jobid; } then int32 pids[n]
assert HEADER.size == 40 and REQ.size == 16

TYPE_BUSY = 0
TYPE_ACTIVITIES = 2

# libkineto's numbers (Config.cpp and its controller loop), restated.
DEFAULT_WARMUP_S = 5.0
START_AFTER_WARMUP_S = 2.0  # two ticks of the 1 s controller loop when no start time is given
MAX_START_AGE_S = 10.0  # an older PROFILE_START_TIME makes the whole config invalid
DEFAULT_DURATION_MS = 500.0
DEFAULT_MEMORY_DURATION_MS = 1000.0

# What the fake profiler does with a config: refuse it, trace, or take a memory snapshot.
Refusal = collections.namedtuple("Refusal", "reason")
TracePlan = collections.namedtuple("TracePlan", "mode start_s duration_s log_file")
SnapshotPlan = collections.namedtuple("SnapshotPlan", "duration_s")


def emit(**fields):
    print(json.dumps(fields), flush=True)


def wall_ms(seconds=None):
    return int(round((time.time() if seconds is None else seconds) * 1000))


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


def write_memory_snapshot(directory, pid, n):
    """A small pickle shaped like torch.cuda.memory._snapshot(); returns its path."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "memory_snapshot_%d_%d.pickle" % (pid, n))
    with open(path + ".tmp", "wb") as out:
        pickle.dump({"segments": [], "device_traces": [[]]}, out)
    os.rename(path + ".tmp", path)
    return path


# ---- What libkineto decides when a config arrives ----

def is_true(value):
    return value.strip().lower() in ("true", "1")


def number(values, key, default):
    """`key` as a float, `default` when absent; ValueError (an invalid config) when malformed."""
    text = values.get(key, "")
    if not text:
        return default
    value = float(text)
    if not math.isfinite(value):
        raise ValueError("%s=%s is not a number" % (key, text))
    return value


def plan_for(values, now_s, max_trace_ms):
    """What libkineto would do with config `values` taken at wall time `now_s`."""
    try:
        if is_true(values.get("PROFILE_MEMORY", "")):
            duration_ms = number(values, "PROFILE_MEMORY_DURATION_MSECS", DEFAULT_MEMORY_DURATION_MS)
            return SnapshotPlan(duration_ms / 1000.0)
        log_file = values.get("ACTIVITIES_LOG_FILE", "")
        if "ACTIVITIES_ITERATIONS" in values or "PROFILE_START_ITERATION" in values:
            duration_ms = min(number(values, "ACTIVITIES_DURATION_MSECS", 0), max_trace_ms)
            return TracePlan("iteration", now_s, duration_ms / 1000.0, log_file)
        return duration_plan(values, now_s, max_trace_ms, log_file)
    except ValueError as e:
        return Refusal("Invalid config: %s" % e)


def duration_plan(values, now_s, max_trace_ms, log_file):
    warmup_s = number(values, "ACTIVITIES_WARMUP_PERIOD_SECS", DEFAULT_WARMUP_S)
    duration_ms = min(number(values, "ACTIVITIES_DURATION_MSECS", DEFAULT_DURATION_MS), max_trace_ms)
    start_ms = number(values, "PROFILE_START_TIME", 0)
    if start_ms == 0:  # not set: libkineto schedules the start itself, never refusing it
        return TracePlan("duration", now_s + warmup_s + START_AFTER_WARMUP_S,
                         duration_ms / 1000.0, log_file)
    refusal = start_time_refusal(start_ms / 1000.0, now_s, warmup_s)
    return refusal or TracePlan("duration", start_ms / 1000.0, duration_ms / 1000.0, log_file)


def start_time_refusal(start_s, now_s, warmup_s):
    """libkineto's checks of an explicit start time, in its order; None when it may start."""
    early_ms = int((start_s - now_s) * 1000)  # negative: the start is already past
    if now_s - start_s > MAX_START_AGE_S:
        return Refusal("Invalid config: PROFILE_START_TIME is %d ms in the past, more than %d s"
                       % (-early_ms, MAX_START_AGE_S))
    if start_s < now_s:
        return Refusal("Not starting tracing - start timestamp is in the past. "
                       "Time difference (ms): %d" % -early_ms)
    if start_s - now_s < warmup_s:
        return Refusal("Not starting tracing - insufficient time for warmup. "
                       "Time to warmup (ms): %d" % early_ms)
    return None


# ---- The fake job's profiler: idle, or busy with one plan ----

class Profiler:
    def __init__(self, args, stats):
        self.args = args
        self.stats = stats
        self.plan = None
        self.done_at = None  # wall time the current plan finishes

    def busy(self):
        return self.plan is not None

    def next_deadline(self):
        return self.done_at

    def accept(self, plan, now_s):
        if isinstance(plan, Refusal):
            self.refuse(plan.reason)
        elif isinstance(plan, SnapshotPlan):
            self.plan, self.done_at = plan, now_s + plan.duration_s
        else:
            self.plan, self.done_at = plan, plan.start_s + plan.duration_s
            emit(event="trace_scheduled", mode=plan.mode, start_ms=wall_ms(plan.start_s),
                 duration_ms=int(plan.duration_s * 1000), at_ms=wall_ms(now_s))

    def refuse(self, reason):
        # A real job logs this and nothing else: the daemon is never told.
        self.stats["refused"] += 1
        print("libkineto (stand-in pid %d): %s" % (os.getpid(), reason), file=sys.stderr, flush=True)
        emit(event="refused", reason=reason, at_ms=wall_ms())

    def advance(self, now_s):
        """Finishes the current plan once its time is up."""
        if self.plan is None or now_s < self.done_at:
            return
        plan, self.plan, self.done_at = self.plan, None, None
        if isinstance(plan, SnapshotPlan):
            self.save_memory_snapshot()
        else:
            self.save_trace(plan)

    def save_memory_snapshot(self):
        self.stats["memory_snapshots"] += 1
        directory = self.args.memory_snapshot_dir
        try:
            path = write_memory_snapshot(directory, os.getpid(), self.stats["memory_snapshots"])
            emit(event="memory_snapshot", path=path, at_ms=wall_ms())
        except OSError as e:
            emit(event="write_failed", path=directory, error=str(e), at_ms=wall_ms())

    def save_trace(self, plan):
        path = trace_path_for(plan.log_file, os.getpid()) if plan.log_file else ""
        if self.args.never_write or not path:
            emit(event="not_written", path=path, at_ms=wall_ms())
            return
        try:
            write_trace(self.args.trace_file, path)
            emit(event="wrote", path=path, start_ms=wall_ms(plan.start_s), at_ms=wall_ms())
        except OSError as e:
            emit(event="write_failed", path=path, error=str(e), at_ms=wall_ms())


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
                      "send_errors": 0, "configs_while_busy": 0, "refused": 0,
                      "memory_snapshots": 0}
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


# ---- The job's main loop ----

def poll_type_now(client, profiler, args, busy_until):
    """Busy while profiling, and while the flags say the profiler is taken by something else."""
    if profiler.busy() or client.stats["polls"] < args.busy_polls or time.monotonic() < busy_until:
        return TYPE_BUSY
    return TYPE_ACTIVITIES


def poll_once(client, profiler, args, busy_until):
    client.drain_late_replies()
    poll_type = poll_type_now(client, profiler, args, busy_until)
    config = client.poll(poll_type)
    if not config:
        return
    client.stats["configs"] += 1
    ignored = poll_type == TYPE_BUSY
    emit(event="config", poll=client.stats["polls"], poll_type=poll_type, text=config,
         ignored=ignored)
    if ignored:  # the daemon should have kept it for later; a busy profiler drops it
        client.stats["configs_while_busy"] += 1
        return
    now_s = time.time()  # libkineto judges the start time against the wall clock
    profiler.accept(plan_for(parse_config(config), now_s, args.max_trace_ms), now_s)


def sleep_until(next_poll, deadline):
    """Sleeps until the next poll or the profiler's next deadline, in short slices so that a
    signal or a deadline is never slept through."""
    delay = next_poll - time.monotonic()
    if deadline is not None:
        delay = min(delay, deadline - time.time())
    time.sleep(max(0.0, min(delay, 0.1)))


def run(client, profiler, args, stopping):
    busy_until = time.monotonic() + args.busy_ms / 1000.0
    next_poll = time.monotonic()
    while not stopping:
        if time.monotonic() >= next_poll:
            if args.polls and client.stats["polls"] >= args.polls:
                break
            started = time.monotonic()
            poll_once(client, profiler, args, busy_until)
            next_poll = started + args.interval_ms / 1000.0
        profiler.advance(time.time())
        sleep_until(next_poll, profiler.next_deadline())


def percentile(values, p):
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100.0 * (len(ordered) - 1))))]


def build_parser():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--socket-dir", default=os.environ.get("KINETO_IPC_SOCKET_DIR", ""))
    parser.add_argument("--interval-ms", type=float, default=5000,
                        help="poll period (libkineto's: 5000)")
    parser.add_argument("--reply-timeout-ms", type=float, default=1000)
    parser.add_argument("--busy-polls", type=int, default=0,
                        help="report busy (type 0) for the first N polls")
    parser.add_argument("--busy-ms", type=float, default=0,
                        help="report busy (type 0) for the first N ms")
    parser.add_argument("--polls", type=int, default=0, help="stop after N polls (0: never)")
    parser.add_argument("--claim-ancestors", default="",
                        help="comma-separated pids to send as its ancestors instead of the real ones")
    parser.add_argument("--job-id", type=int, default=int(os.environ.get("SLURM_JOB_ID", "0")))
    parser.add_argument("--trace-file", help="trace to write when asked (.gz is gunzipped)")
    parser.add_argument("--never-write", action="store_true", help="never write a trace")
    parser.add_argument("--max-trace-ms", type=float, default=2000)
    parser.add_argument("--memory-snapshot-dir",
                        default=os.path.join(tempfile.gettempdir(), "kineto_memory_snapshots"),
                        help="where PROFILE_MEMORY=true snapshots go (the job's own default path)")
    parser.add_argument("--report-latencies", action="store_true")
    parser.add_argument("--start-at", type=float, default=0,
                        help="unix time of the first poll (lets many clients start together)")
    return parser


def main():
    args = build_parser().parse_args()

    stopping = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stopping.append(True))

    client = Client(args)
    profiler = Profiler(args, client.stats)
    emit(event="start", pid=os.getpid(), ancestry=client.pids, job_id=args.job_id,
         address=repr(client.address), daemon=repr(client.daemon))
    while not stopping and time.time() < args.start_at:
        # The clock moves between the test and the sleep: never ask for a negative sleep.
        time.sleep(max(0.0, min(0.05, args.start_at - time.time())))
    try:
        run(client, profiler, args, stopping)
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
