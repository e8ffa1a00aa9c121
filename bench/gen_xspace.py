#!/usr/bin/python3
"""Writes a large XSpace (.xplane.pb) by repeating the planes of a real corpus file.

Each copy's XLine.timestamp_ns is moved forward by the corpus span (plus a 1 µs gap), so the
copies follow each other in time instead of overlapping. Two layouts:
  planes (default)  the XSpace holds every corpus plane `copies` times: many modest planes
                    with repeated names, as the brief's "concatenate planes" approach.
  lines             one plane per corpus plane, its lines repeated `copies` times inside it:
                    few huge planes, the shape of a long real capture, which a reader can only
                    handle in bounded memory if it streams within a plane.
Memory: the corpus file is held once (3 MB); the output is streamed.

Field numbers (tensorflow/tsl profiler xplane.proto): XSpace.planes=1; XPlane.lines=3;
XLine.timestamp_ns=3, XLine.events=4; XEvent.offset_ps=2, XEvent.duration_ps=3.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import protobuf_wire as wire  # noqa: E402

DEFAULT_CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                              "../../shared/corpus/xspace/tf_8gpu_multi_worker.xplane.pb")
SPACE_PLANES = 1
PLANE_LINES = 3
LINE_TIMESTAMP_NS, LINE_EVENTS = 3, 4
EVENT_OFFSET_PS, EVENT_DURATION_PS = 2, 3
GAP_NS = 1000


class LineTemplate:
    """One XLine record split around its timestamp so a copy only re-encodes that varint."""

    def __init__(self, buf, start, end):
        self.before = b""
        self.after = b""
        self.timestamp_ns = 0
        pieces = []
        found = False
        for field, _, value, rec_start, rec_end in wire.iter_fields(buf, start, end):
            if field == LINE_TIMESTAMP_NS and not found:
                self.before = b"".join(pieces)
                pieces = []
                self.timestamp_ns = wire.to_int64(value)
                found = True
            else:
                pieces.append(bytes(buf[rec_start:rec_end]))
        self.after = b"".join(pieces)
        # Event extent in ps relative to the line start, for the span of the whole file.
        self.first_ps, self.last_ps = None, None
        for field, _, value, _, _ in wire.iter_fields(buf, start, end):
            if field == LINE_EVENTS:
                offset, duration = _event_offset_duration(buf, *value)
                self.first_ps = offset if self.first_ps is None else min(self.first_ps, offset)
                end_ps = offset + duration
                self.last_ps = end_ps if self.last_ps is None else max(self.last_ps, end_ps)

    def record(self, shift_ns):
        payload = (self.before + wire.encode_tag(LINE_TIMESTAMP_NS, wire.VARINT) +
                   wire.encode_varint(self.timestamp_ns + shift_ns) + self.after)
        return wire.encode_length_delimited(PLANE_LINES, len(payload)) + payload


def _event_offset_duration(buf, start, end):
    offset = duration = 0
    for field, _, value, _, _ in wire.iter_fields(buf, start, end):
        if field == EVENT_OFFSET_PS:
            offset = wire.to_int64(value)
        elif field == EVENT_DURATION_PS:
            duration = wire.to_int64(value)
    return offset, duration


class PlaneTemplate:
    """A plane's non-line records (kept as bytes) and its lines."""

    def __init__(self, buf, start, end):
        other, self.lines = [], []
        for field, _, value, rec_start, rec_end in wire.iter_fields(buf, start, end):
            if field == PLANE_LINES:
                self.lines.append(LineTemplate(buf, *value))
            else:
                other.append(bytes(buf[rec_start:rec_end]))
        self.other = b"".join(other)

    def record_parts(self, shifts_ns):
        """Yields the plane record holding its lines once per shift, piece by piece, so a
        huge plane is never held whole: its size is summed first, then the lines re-encoded."""
        size = len(self.other) + sum(len(line.record(shift))
                                     for shift in shifts_ns for line in self.lines)
        yield wire.encode_length_delimited(SPACE_PLANES, size)
        yield self.other
        for shift in shifts_ns:
            for line in self.lines:
                yield line.record(shift)


def load_space(path):
    buf = open(path, "rb").read()
    planes, other = [], []
    for field, _, value, rec_start, rec_end in wire.iter_fields(buf):
        if field == SPACE_PLANES:
            planes.append(PlaneTemplate(buf, *value))
        else:
            other.append(bytes(buf[rec_start:rec_end]))
    return planes, b"".join(other)


def copy_shift_ns(planes):
    """Time between copies: the file's event span rounded up to whole ns, plus a gap."""
    starts, ends = [], []
    for plane in planes:
        for line in plane.lines:
            if line.first_ps is not None:
                starts.append(line.timestamp_ns * 1000 + line.first_ps)
                ends.append(line.timestamp_ns * 1000 + line.last_ps)
    if not starts:
        return GAP_NS
    return -(-(max(ends) - min(starts)) // 1000) + GAP_NS


def write_planes_layout(out, planes, shift_ns, target_bytes):
    written, copy = 0, 0
    while written < target_bytes or copy == 0:
        for plane in planes:
            for part in plane.record_parts([copy * shift_ns]):
                out.write(part)
                written += len(part)
        copy += 1
    return copy, written


def write_lines_layout(out, planes, shift_ns, target_bytes):
    # Line records only grow when their timestamp grows, so this many copies reach the target.
    line_bytes = sum(len(line.record(0)) for plane in planes for line in plane.lines)
    copies = max(1, -(-target_bytes // max(1, line_bytes)))
    written = 0
    for plane in planes:
        for part in plane.record_parts([c * shift_ns for c in range(copies)]):
            out.write(part)
            written += len(part)
    return copies, written


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--size-mb", type=float, required=True,
                        help="minimum output size in MiB")
    parser.add_argument("--from", dest="source", default=DEFAULT_CORPUS)
    parser.add_argument("--layout", choices=["planes", "lines"], default="planes")
    args = parser.parse_args()

    planes, space_other = load_space(args.source)
    shift_ns = copy_shift_ns(planes)
    target = int(args.size_mb * 1024 * 1024)
    with open(args.out, "wb", buffering=1 << 20) as out:
        writer = write_planes_layout if args.layout == "planes" else write_lines_layout
        copies, written = writer(out, planes, shift_ns, target)
        out.write(space_other)  # hostnames, errors, warnings: once
        written += len(space_other)
    plane_count = len(planes) * copies if args.layout == "planes" else len(planes)
    print(f"{args.out}: {written} bytes, {copies} copies of {len(planes)} planes "
          f"({plane_count} planes), {shift_ns} ns apart", file=sys.stderr)


if __name__ == "__main__":
    main()
