#!/usr/bin/python3
"""Writes a large Kineto (PyTorch profiler) JSON trace by repeating a real corpus trace.

Repetition k shifts every `ts` by k × (corpus span + 1 µs), every correlation / External id /
flow id by k × (largest id + 1) so launches still join their kernels and only their own, and
every ProfilerStep#N to a fresh step number. Metadata events (ph "M") are written once.

Speed and memory: the corpus is parsed once (15 MB) into one list of text pieces with slots
for the shifted numbers; a repetition only formats those integers and joins the pieces, so
1 GB takes seconds and memory stays at a few corpus sizes whatever the output size.
Timestamps keep Kineto's exact text form, microseconds with three decimals, formatted from
integer nanoseconds (never through a float). A name ending in .gz writes gzip.
"""

import argparse
import decimal
import gzip
import json
import os
import re
import sys

DEFAULT_CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                              "../../shared/corpus/kineto/v100_resnet_rank0.pt.trace.json.gz")
ID_ARGS = ("correlation", "External id")
FLOW_PHASES = ("s", "t", "f")
STEP_NAME = re.compile(r"ProfilerStep#(\d+)")
TS, ID, STEP = 0, 1, 2  # slot kinds
GAP_NS = 1000


def to_json(value):
    """json.dumps for parsed values, keeping Decimal numbers as their exact source text."""
    if isinstance(value, dict):
        return "{" + ", ".join(json.dumps(k, ensure_ascii=False) + ": " + to_json(v)
                               for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(to_json(v) for v in value) + "]"
    if isinstance(value, decimal.Decimal):
        return str(value)
    return json.dumps(value, ensure_ascii=False)


def ts_to_ns(ts):
    if isinstance(ts, bool) or not isinstance(ts, (int, decimal.Decimal)):
        raise ValueError(f"ts is not a number: {ts!r}")
    ns = int(ts * 1000)
    if ns < 0:
        raise ValueError(f"negative ts is not supported: {ts}")
    return ns


class RepeatTemplate:
    """The events as text pieces; `slots` lists (piece index, kind, base value)."""

    def __init__(self):
        self.pieces = []
        self.slots = []

    def literal(self, text):
        self.pieces.append(text)

    def slot(self, kind, base):
        self.slots.append((len(self.pieces), kind, base))
        self.pieces.append(None)

    def add_event(self, event):
        """Appends one event; number fields that change per repetition become slots."""
        self.literal("{")
        first = True
        for key, value in event.items():
            self.literal(("" if first else ", ") + json.dumps(key) + ": ")
            first = False
            if key == "ts":
                ns = ts_to_ns(value)
                self.slot(TS, ns // 1000)
                self.literal(".%03d" % (ns % 1000))
            elif key == "id" and event.get("ph") in FLOW_PHASES and _is_int(value):
                self.slot(ID, value)
            elif key == "name" and isinstance(value, str) and STEP_NAME.fullmatch(value):
                self.literal('"ProfilerStep#')
                self.slot(STEP, int(STEP_NAME.fullmatch(value).group(1)))
                self.literal('"')
            elif key == "args" and isinstance(value, dict):
                self.add_args(value)
            else:
                self.literal(to_json(value))
        self.literal("}")

    def add_args(self, args):
        self.literal("{")
        first = True
        for key, value in args.items():
            self.literal(("" if first else ", ") + json.dumps(key, ensure_ascii=False) + ": ")
            first = False
            if key in ID_ARGS and _is_int(value):
                self.slot(ID, value)
            else:
                self.literal(to_json(value))
        self.literal("}")

    def separator(self):
        self.literal(",\n")

    def render(self, offsets):
        """The text of one repetition: every slot's base plus its kind's offset."""
        pieces = self.pieces
        for index, kind, base in self.slots:
            pieces[index] = str(base + offsets[kind])
        return "".join(pieces)


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def load_corpus(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        doc = json.load(f, parse_float=decimal.Decimal)
    events = doc if isinstance(doc, list) else doc.get("traceEvents", [])
    return doc, events


def build_templates(events):
    """Splits the events into metadata (written once) and the repeated body."""
    meta, body = RepeatTemplate(), RepeatTemplate()
    for event in events:
        target = meta if event.get("ph") == "M" else body
        if target.pieces:
            target.separator()
        target.add_event(event)
    return meta, body


def repeat_offsets(events, body):
    """Per-repetition increments of ts (µs), ids and step numbers."""
    starts, ends = [], []
    for event in events:
        if event.get("ph") != "M" and "ts" in event:
            start = ts_to_ns(event["ts"])
            dur = event.get("dur", 0)
            dur_ns = int(dur * 1000) if isinstance(dur, (int, decimal.Decimal)) else 0
            starts.append(start)
            ends.append(start + max(0, dur_ns))
    span_us = -(-(max(ends) - min(starts)) // 1000) if starts else 0
    ids = [base for _, kind, base in body.slots if kind == ID]
    steps = [base for _, kind, base in body.slots if kind == STEP]
    return (span_us + GAP_NS // 1000,
            max(ids) + 1 if ids else 0,
            max(steps) - min(steps) + 1 if steps else 0)


def write_document(out, doc, meta, body, offsets, target_bytes, repetitions=None):
    """Streams the document: `repetitions` copies when given, else as many as reach
    `target_bytes`; returns (repetitions, bytes written)."""
    written = 0

    def emit(text):
        nonlocal written
        data = text.encode("utf-8")
        out.write(data)
        written += len(data)

    def emit_events():
        emit("\n")
        if meta.pieces:
            emit(meta.render((0, 0, 0)))
        rep = 0
        while rep == 0 or (rep < repetitions if repetitions else written < target_bytes):
            if rep > 0 or meta.pieces:
                emit(",\n")
            emit(body.render(tuple(rep * o for o in offsets)))
            rep += 1
        emit("\n")
        return rep

    if isinstance(doc, list):
        emit("[")
        reps = emit_events()
        emit("]\n")
        return reps, written
    emit("{")
    first, reps = True, 0
    for key, value in doc.items():
        emit(("\n  " if first else ",\n  ") + json.dumps(key) + ": ")
        first = False
        if key == "traceEvents":
            emit("[")
            reps = emit_events()
            emit("  ]")
        else:
            emit(to_json(value))
    emit("\n}\n")
    return reps, written


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    size = parser.add_mutually_exclusive_group(required=True)
    size.add_argument("--size-mb", type=float, help="minimum uncompressed output size in MiB")
    size.add_argument("--repetitions", type=int, help="exactly this many copies of the corpus events")
    parser.add_argument("--from", dest="source", default=DEFAULT_CORPUS)
    args = parser.parse_args()

    doc, events = load_corpus(args.source)
    meta, body = build_templates(events)
    offsets = repeat_offsets(events, body)
    event_count = len(events)
    events.clear()  # the templates hold all that is needed; free the parsed dicts
    if args.repetitions is not None and args.repetitions < 1:
        parser.error("--repetitions must be at least 1")
    target = int((args.size_mb or 0) * 1024 * 1024)
    if args.out.endswith(".gz"):
        out = gzip.open(args.out, "wb", compresslevel=6)
    else:
        out = open(args.out, "wb", buffering=1 << 20)
    with out:
        reps, written = write_document(out, doc, meta, body, offsets, target, args.repetitions)
    print(f"{args.out}: {written} bytes uncompressed, {reps} repetitions of "
          f"{event_count} events, ts +{offsets[TS]} us and ids +{offsets[ID]} per repetition",
          file=sys.stderr)


if __name__ == "__main__":
    main()
