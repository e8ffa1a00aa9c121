#!/usr/bin/env python3
"""Sends one request to a dynolog-compatible API, the way `dyno gputrace` does, and prints
the JSON reply on one line.

Framing (docs/protocols.md, dynolog's TCP API): int32 length in native byte order, then that many
bytes of JSON; the reply is framed the same way. One request per connection.

  dyno_standin.py --port P getStatus
  dyno_standin.py --port P gputrace --log-file /tmp/x.json --duration-ms 200 --pids 0
  dyno_standin.py --port P raw '{"fn": "nope"}'        # any JSON text, framed
  dyno_standin.py --port P bytes 0500000061            # hex bytes sent as-is, unframed
Exit status: 0 with a reply, 2 when the server closed without one.
"""
import argparse
import json
import socket
import struct
import sys

LENGTH = struct.Struct("=i")


def read_exactly(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=1778)
    parser.add_argument("--timeout", type=float, default=10)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("getStatus")
    sub.add_parser("getVersion")
    trace = sub.add_parser("gputrace")
    trace.add_argument("--log-file", required=True)
    trace.add_argument("--duration-ms", type=int, default=500)
    trace.add_argument("--pids", default="0", help="comma-separated; 0 = all")
    trace.add_argument("--job-id", type=int, default=0)
    trace.add_argument("--process-limit", type=int, default=3)
    trace.add_argument("--profile-memory", action="store_true",
                       help="ask for a memory snapshot instead of a trace, as `dyno gputrace --profile-memory`")
    raw = sub.add_parser("raw")
    raw.add_argument("json_text")
    raw_bytes = sub.add_parser("bytes")
    raw_bytes.add_argument("hex")
    args = parser.parse_args()

    if args.command in ("getStatus", "getVersion"):
        body = json.dumps({"fn": args.command}).encode()
    elif args.command == "gputrace":
        # The config text dyno builds for a duration-based trace.
        config = "ACTIVITIES_LOG_FILE=%s\nPROFILE_START_TIME=0\nACTIVITIES_DURATION_MSECS=%d" % (
            args.log_file, args.duration_ms)
        if args.profile_memory:
            # The keys dyno adds for --profile-memory: the job then snapshots its memory for
            # the duration instead of tracing, and writes the snapshot where it chooses.
            config += "\nPROFILE_PROFILE_MEMORY=true\nPROFILE_MEMORY=true\nPROFILE_MEMORY_DURATION_MSECS=%d" % (
                args.duration_ms)
        body = json.dumps({"fn": "setKinetOnDemandRequest", "config": config,
                           "job_id": args.job_id,
                           "pids": [int(p) for p in args.pids.split(",") if p],
                           "process_limit": args.process_limit}).encode()
    elif args.command == "raw":
        body = args.json_text.encode()
    else:
        body = None

    with socket.create_connection((args.host, args.port), timeout=args.timeout) as sock:
        if body is None:
            sock.sendall(bytes.fromhex(args.hex))
        else:
            sock.sendall(LENGTH.pack(len(body)) + body)
        sock.shutdown(socket.SHUT_WR)
        header = read_exactly(sock, LENGTH.size)
        if header is None:
            print("no reply: server closed the connection", file=sys.stderr)
            return 2
        (length,) = LENGTH.unpack(header)
        reply = read_exactly(sock, length) if length > 0 else b""
        if reply is None:
            print("truncated reply", file=sys.stderr)
            return 2
    print(reply.decode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
