#!/usr/bin/env python3
"""kineto_standin.py follows libkineto's rules for when a trace may start.

Real PyTorch jobs refuse a PROFILE_START_TIME in the past, one nearer than the warm-up, and call
one more than 10 s old invalid; without a start time they begin at poll + warm-up + 2 s
(docs/protocols.md, When a time-based trace may start). Our C++ tests drive captures through this
stand-in, so if it did not enforce the same rules they would pass while real jobs write nothing.
Each test here plays the daemon itself (a filesystem "dynolog" datagram socket), hands one config to
the stand-in's first activities poll and reads the stand-in's JSON lines.

Standard library only: runs under /usr/bin/python3 with no build.
"""
import importlib.util
import json
import os
import queue
import re
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest

STANDIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kineto_standin.py")
HEADER = struct.Struct("=Q32s")  # { uint64 size; char type[32]; }
REQ = struct.Struct("=iiq")  # { int32 type; int32 n; int64 jobid; } then int32 pids[n]
TYPE_BUSY = 0
TYPE_ACTIVITIES = 2
POLL_MS = 100


def now_ms():
    # Whole ms rounded down: never later than the stand-in's rounded stamps of later moments.
    return int(time.time() * 1000)


class FakeDaemon(threading.Thread):
    """Answers every poll at once, as dynolog does. `make_config(now_ms)` builds the one config,
    handed to the first activities poll (or to any poll with hand_to_busy), so a start time can
    be set relative to the very poll that delivers it."""

    def __init__(self, socket_dir, make_config, hand_to_busy=False):
        super().__init__(daemon=True)
        self.make_config = make_config
        self.hand_to_busy = hand_to_busy
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(os.path.join(socket_dir, "dynolog"))
        self.lock = threading.Lock()
        self.polls = []  # (wall ms, poll type)
        self.config_sent_ms = None
        self.stopping = threading.Event()

    def run(self):
        while not self.stopping.is_set():
            if select.select([self.sock], [], [], 0.05)[0]:
                data, sender = self.sock.recvfrom(1 << 16)
                self.answer(data, sender)

    def answer(self, data, sender):
        if len(data) < HEADER.size + REQ.size:
            return
        _, message_type = HEADER.unpack_from(data)
        if message_type.rstrip(b"\0") != b"req":
            return
        poll_type = REQ.unpack_from(data, HEADER.size)[0]
        at = now_ms()
        config = ""
        if self.config_sent_ms is None and (poll_type & TYPE_ACTIVITIES or self.hand_to_busy):
            config = self.make_config(at)
            self.config_sent_ms = at
        payload = config.encode()
        self.sock.sendto(HEADER.pack(len(payload), b"req") + payload, sender)
        with self.lock:
            self.polls.append((at, poll_type))

    def polls_between(self, start_ms, end_ms):
        with self.lock:
            return [kind for at, kind in self.polls if start_ms < at < end_ms]

    def stop(self):
        self.stopping.set()
        self.join(2)
        self.sock.close()


class Standin:
    """The stand-in as a child process, its stdout read as JSON events on a thread."""

    def __init__(self, socket_dir, extra):
        self.process = subprocess.Popen(
            [sys.executable, "-u", STANDIN, "--socket-dir", socket_dir,
             "--interval-ms", str(POLL_MS)] + list(extra),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.events = queue.Queue()
        self.seen = []
        self.stderr = []
        self.readers = [threading.Thread(target=self.read_events, daemon=True),
                        threading.Thread(target=self.read_stderr, daemon=True)]
        for reader in self.readers:
            reader.start()

    def read_events(self):
        for line in self.process.stdout:
            try:
                self.events.put(json.loads(line))
            except ValueError:
                self.events.put({"event": "unparsable", "line": line})

    def read_stderr(self):
        for line in self.process.stderr:
            self.stderr.append(line)

    def wait_for(self, name, timeout_s):
        """The next event called `name`; fails the test after timeout_s."""
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            try:
                event = self.events.get(timeout=max(0.0, left))
            except queue.Empty:
                raise AssertionError("no %r event in %.1f s; saw %s" % (name, timeout_s, self.seen))
            self.seen.append(event)
            if event.get("event") == name:
                return event

    def collect(self, seconds):
        """Every event seen so far and during the next `seconds`."""
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return self.seen
            try:
                self.seen.append(self.events.get(timeout=left))
            except queue.Empty:
                return self.seen

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)

    def close(self):
        """Stops the child and closes its pipes once the readers have drained them."""
        self.stop()
        for reader in self.readers:
            reader.join(2)
        self.process.stdout.close()
        self.process.stderr.close()


class StandinRulesTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="kineto_rules_")
        self.log_file = os.path.join(self.dir, "trace.json")
        self.daemon = None
        self.standin = None
        self.start_ms = None  # set by start_after_poll's config

    def tearDown(self):
        if self.standin:
            self.standin.close()
        if self.daemon:
            self.daemon.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def start(self, make_config, *extra, hand_to_busy=False):
        self.daemon = FakeDaemon(self.dir, make_config, hand_to_busy)
        self.daemon.start()
        self.standin = Standin(self.dir, extra)
        return self.standin.wait_for("start", 5)["pid"]

    def config(self, *lines):
        return "\n".join(("ACTIVITIES_LOG_FILE=" + self.log_file,) + lines)

    def start_after_poll(self, offset_ms, *lines):
        """A config whose PROFILE_START_TIME lies `offset_ms` after the poll that delivers it
        (before, when negative); the chosen start is kept in self.start_ms."""
        def make(at):
            self.start_ms = int(at) + offset_ms
            return self.config("PROFILE_START_TIME=%d" % self.start_ms, *lines)
        return make

    def trace_path(self, pid):
        return os.path.join(self.dir, "trace_%d.json" % pid)

    def assert_traced_after(self, wrote, earliest_ms, latest_ms):
        self.assertGreaterEqual(wrote["at_ms"], earliest_ms, wrote)
        self.assertLessEqual(wrote["at_ms"], latest_ms, wrote)
        with open(wrote["path"]) as trace:
            self.assertIn("traceEvents", json.load(trace))

    def assert_busy_while_waiting(self, until_ms):
        """Between the config and the trace the job keeps polling, busy, every interval."""
        kinds = self.daemon.polls_between(self.daemon.config_sent_ms, until_ms - POLL_MS)
        # At least half the polls due, allowing for scheduling delays on a loaded machine.
        due = (until_ms - self.daemon.config_sent_ms) / POLL_MS
        self.assertGreaterEqual(len(kinds), max(1, due / 2 - 1), kinds)
        self.assertEqual(set(kinds), {TYPE_BUSY}, kinds)

    def assert_refused(self, pid, reason_pattern):
        refused = self.standin.wait_for("refused", 5)
        self.assertRegex(refused["reason"], reason_pattern)
        later = self.standin.collect(0.5)
        names = [event.get("event") for event in later]
        self.assertNotIn("trace_scheduled", names, later)
        self.assertNotIn("wrote", names, later)
        self.assertFalse(os.path.exists(self.trace_path(pid)))
        self.assertTrue(any(refused["reason"] in line for line in self.standin.stderr),
                        self.standin.stderr)
        # Back to ordinary polling: the job could take the next config.
        after = self.daemon.polls_between(refused["at_ms"], now_ms())
        self.assertTrue(after and set(after) == {TYPE_ACTIVITIES}, after)
        return refused

    def test_without_start_time_traces_at_poll_plus_warmup_plus_two_seconds(self):
        pid = self.start(lambda at: self.config("PROFILE_START_TIME=0", "ACTIVITIES_DURATION_MSECS=100",
                                                "ACTIVITIES_WARMUP_PERIOD_SECS=1"))
        wrote = self.standin.wait_for("wrote", 10)
        sent = self.daemon.config_sent_ms
        self.assertEqual(wrote["path"], self.trace_path(pid))
        self.assert_traced_after(wrote, sent + 3100 - 50, sent + 3100 + 1000)
        self.assert_busy_while_waiting(wrote["at_ms"])

    def test_default_warmup_is_five_seconds(self):
        self.start(lambda at: self.config("ACTIVITIES_DURATION_MSECS=100"))
        wrote = self.standin.wait_for("wrote", 12)
        sent = self.daemon.config_sent_ms
        self.assert_traced_after(wrote, sent + 7100 - 50, sent + 7100 + 1000)

    def test_start_time_in_the_past_is_refused(self):
        pid = self.start(self.start_after_poll(-3000, "ACTIVITIES_DURATION_MSECS=100"))
        self.assert_refused(pid, r"start timestamp is in the past\. Time difference \(ms\): \d+")

    def test_start_time_over_ten_seconds_past_is_invalid(self):
        pid = self.start(self.start_after_poll(-15000, "ACTIVITIES_DURATION_MSECS=100"))
        self.assert_refused(pid, re.compile("invalid", re.IGNORECASE))

    def test_start_time_nearer_than_warmup_is_refused(self):
        pid = self.start(self.start_after_poll(1000, "ACTIVITIES_WARMUP_PERIOD_SECS=2",
                                               "ACTIVITIES_DURATION_MSECS=100"))
        self.assert_refused(pid, r"insufficient time for warmup\. Time to warmup \(ms\): \d+")
        # Not merely late: past the start time there is still no trace.
        self.standin.collect(max(0.0, (self.start_ms + 300 - now_ms()) / 1000.0))
        self.assertNotIn("wrote", [event.get("event") for event in self.standin.seen])
        self.assertFalse(os.path.exists(self.trace_path(pid)))

    def test_start_time_beyond_warmup_traces_at_that_time(self):
        pid = self.start(self.start_after_poll(2500, "ACTIVITIES_WARMUP_PERIOD_SECS=1",
                                               "ACTIVITIES_DURATION_MSECS=100"))
        scheduled = self.standin.wait_for("trace_scheduled", 5)
        self.assertEqual(scheduled["start_ms"], self.start_ms)
        wrote = self.standin.wait_for("wrote", 10)
        self.assert_traced_after(wrote, self.start_ms + 100, self.start_ms + 100 + 1000)
        self.assertGreaterEqual(os.path.getmtime(self.trace_path(pid)) * 1000, self.start_ms)
        self.assert_busy_while_waiting(wrote["at_ms"])

    def test_iteration_mode_starts_at_once_without_clock_checks(self):
        self.start(lambda at: self.config("PROFILE_START_ITERATION=0", "ACTIVITIES_ITERATIONS=2",
                                          "ACTIVITIES_WARMUP_PERIOD_SECS=5"))
        wrote = self.standin.wait_for("wrote", 5)
        sent = self.daemon.config_sent_ms
        self.assert_traced_after(wrote, sent, sent + 1000)

    def test_memory_snapshot_goes_to_job_path_not_log_file(self):
        snapshots = os.path.join(self.dir, "snapshots")
        pid = self.start(lambda at: self.config("PROFILE_START_TIME=0", "ACTIVITIES_DURATION_MSECS=100",
                                                "PROFILE_PROFILE_MEMORY=true", "PROFILE_MEMORY=true",
                                                "PROFILE_MEMORY_DURATION_MSECS=300"),
                         "--memory-snapshot-dir", snapshots)
        snapshot = self.standin.wait_for("memory_snapshot", 5)
        self.assertEqual(snapshot["path"], os.path.join(snapshots, "memory_snapshot_%d_1.pickle" % pid))
        self.assertGreater(os.path.getsize(snapshot["path"]), 0)
        self.assertGreaterEqual(snapshot["at_ms"], self.daemon.config_sent_ms + 300 - 50)
        self.assert_busy_while_waiting(snapshot["at_ms"])
        later = self.standin.collect(0.5)
        self.assertNotIn("wrote", [event.get("event") for event in later], later)
        self.assertEqual([name for name in os.listdir(self.dir) if name.startswith("trace")], [])

    def test_busy_ms_reports_busy_for_that_long(self):
        started = now_ms()
        self.start(lambda at: self.config("PROFILE_START_ITERATION=0", "ACTIVITIES_ITERATIONS=1"),
                   "--busy-ms", "600")
        config = self.standin.wait_for("config", 5)
        self.assertEqual(config["poll_type"], TYPE_ACTIVITIES)
        self.assertGreaterEqual(self.daemon.config_sent_ms - started, 600)
        early = self.daemon.polls_between(0, self.daemon.config_sent_ms)
        self.assertTrue(early and set(early) == {TYPE_BUSY}, early)

    def test_config_handed_to_a_busy_poll_is_ignored(self):
        self.start(lambda at: self.config("PROFILE_START_ITERATION=0", "ACTIVITIES_ITERATIONS=1"),
                   "--busy-polls", "3", hand_to_busy=True)
        config = self.standin.wait_for("config", 5)
        self.assertEqual((config["poll_type"], config["ignored"]), (TYPE_BUSY, True))
        self.standin.collect(0.5)
        self.standin.stop()
        summary = self.standin.wait_for("summary", 5)
        self.assertEqual((summary["configs_while_busy"], summary["refused"], summary["memory_snapshots"]),
                         (1, 0, 0))
        self.assertNotIn("trace_scheduled", [event.get("event") for event in self.standin.seen])

    def test_default_poll_interval_is_libkineto_five_seconds(self):
        spec = importlib.util.spec_from_file_location("kineto_standin", STANDIN)
        module = importlib.util.module_from_spec(spec)
        sys.dont_write_bytecode = True  # leave no __pycache__ in the source tree
        spec.loader.exec_module(module)
        self.assertEqual(module.build_parser().parse_args([]).interval_ms, 5000)


if __name__ == "__main__":
    unittest.main()
