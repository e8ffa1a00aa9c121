#!/usr/bin/env python3
"""A STAND-IN for the Nsight Systems CLI (`nsys`), for fleetprof's tests only. It is not nsys.

It answers the three commands fleetprof-agent runs with the node's nsys (--nsys) the way the
documented CLI does (docs.nvidia.com/nsight-systems/UserGuide, "CLI command switches"):

  nsys start --session=NAME --output=REPORT[.nsys-rep]
      starts collection in the session NAME that `nsys launch --session-new=NAME CMD` made;
      fails when there is no such session of the caller's user, or it is already collecting.
  nsys stop --session=NAME
      stops the collection and writes REPORT.nsys-rep ("Generated: PATH").
  nsys export --type sqlite --output FILE REPORT
      writes REPORT's SQLite export to FILE; refuses to overwrite FILE (no --force-overwrite).

What stands in for nsys's own machinery:
  * a session exists while a process of the caller's uid has FLEETPROF_NSYS_SESSION=NAME in its
    environment (what a job started under `nsys launch --session-new=NAME` carries here);
  * the "report" is the gunzipped copy of a real export (--source, a corpus *.sqlite.gz), and
    `export` copies a report's bytes out again, so what the agent uploads is a real nsys export.

Options before the command, set by the test's wrapper script (the agent passes none):
  --state DIR       sessions being collected, and log.jsonl: per call its argv, uid, gid, groups, cwd
  --source FILE     the export standing in for reports (gzip)
  --export-sleep S  `export` takes S seconds first (a stuck nsys)
  --export-fill N   `export` writes N zero bytes after the copy (a huge export)
"""

import gzip
import json
import os
import shutil
import sys
import time


def fail(message):
    print(f"Error: {message}", file=sys.stderr)
    sys.exit(1)


def option(args, *names):
    """Value of --name=V, --name V or -n V in args (removed from it); None when absent."""
    for i, arg in enumerate(args):
        for name in names:
            if arg.startswith(name + "=") and name.startswith("--"):
                del args[i]
                return arg[len(name) + 1:]
            if arg == name and i + 1 < len(args):
                value = args[i + 1]
                del args[i:i + 2]
                return value
    return None


def session_exists(name):
    me = os.getuid()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if os.stat(f"/proc/{pid}").st_uid != me:
                continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        if f"FLEETPROF_NSYS_SESSION={name}".encode() in env:
            return True
    return False


def main():
    args = sys.argv[1:]
    state = option(args, "--state")
    source = option(args, "--source")
    export_sleep = float(option(args, "--export-sleep") or 0)
    export_fill = int(option(args, "--export-fill") or 0)
    if state is None or source is None:
        fail("stand-in nsys: the test's wrapper passes --state and --source")
    with open(os.path.join(state, "log.jsonl"), "a") as log:
        log.write(json.dumps({"argv": args, "uid": os.getuid(),
                              "gid": os.getgid(), "groups": os.getgroups(), "cwd": os.getcwd(),
                              "env": sorted(os.environ)}) + "\n")
    if not args:
        fail("usage: nsys [command_switch][optional command_switch_options][application] [optional application_options]")
    command, rest = args[0], args[1:]
    if command == "--version":
        print("NVIDIA Nsight Systems version 2024.5.1.113-245134619542v0 (stand-in)")
        return
    if command == "start":
        session = option(rest, "--session")
        output = option(rest, "--output", "-o")
        if not session or not session_exists(session):
            fail(f"session '{session}' does not exist")
        marker = os.path.join(state, f"{os.getuid()}-{session}.collecting")
        if os.path.exists(marker):
            fail("a collection is already running in this session")
        if output is None:
            output = os.path.join(os.getcwd(), "report1")
        if not output.endswith(".nsys-rep"):
            output += ".nsys-rep"
        with open(marker, "w") as f:
            f.write(os.path.abspath(output))
        return
    if command == "stop":
        session = option(rest, "--session")
        marker = os.path.join(state, f"{os.getuid()}-{session}.collecting")
        if not session or not os.path.exists(marker):
            fail(f"no collection is running in session '{session}'")
        with open(marker) as f:
            report = f.read()
        os.remove(marker)
        print("Generating '/tmp/nsys-report-standin.qdstrm'")
        with gzip.open(source, "rb") as src, open(report, "wb") as out:
            shutil.copyfileobj(src, out)
        print(f"Generated:\n    {report}")
        return
    if command == "export":
        kind = option(rest, "--type", "-t")
        output = option(rest, "--output", "-o")
        if kind != "sqlite" or output is None or len(rest) != 1:
            fail("usage: nsys export --type sqlite --output FILE REPORT (stand-in)")
        report = rest[0]
        if not os.path.isfile(report):
            fail(f"cannot open '{report}'")
        if os.path.exists(output):
            fail(f"'{output}' exists; use --force-overwrite=true to overwrite it")
        time.sleep(export_sleep)
        with open(report, "rb") as src, open(output, "wb") as out:
            shutil.copyfileobj(src, out)
            remaining = export_fill
            while remaining > 0:
                chunk = min(remaining, 1 << 20)
                out.write(b"\0" * chunk)
                remaining -= chunk
        print(f"Exported: {output}")
        return
    fail(f"unknown command '{command}' (stand-in: start, stop, export)")


if __name__ == "__main__":
    main()
