#!/usr/bin/python3
"""Latency of fleetprof's Pyroscope query API (Connect, JSON) against a running server.

    connect_query.py --url http://H:P --job JOB --profile ID [--iterations N] [--token T]

Times, over one keep-alive connection: SelectMergeStacktraces of the whole job and of one
profile (device time), SelectSeries of the job grouped by node, and, for comparison, the HTTP
route GET /api/v1/jobs/JOB/flamegraph. Prints median and p99 of each (ms). Standard library only.
"""

import argparse
import http.client
import json
import time
import urllib.parse

DEVICE = "fleetprof:device_time:nanoseconds:device_time:nanoseconds"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", required=True)
    p.add_argument("--job", required=True)
    p.add_argument("--profile", required=True)
    p.add_argument("--iterations", type=int, default=100)
    p.add_argument("--token", default="")
    args = p.parse_args()
    parts = urllib.parse.urlsplit(args.url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    headers = {"Content-Type": "application/json"}
    if args.token:
        headers["Authorization"] = f"Bearer {args.token}"
    now = int(time.time() * 1000)
    span = {"start": now - 86400000, "end": now + 60000}

    def post(method, body):
        conn.request("POST", "/querier.v1.QuerierService/" + method, json.dumps(body), headers)
        res = conn.getresponse()
        data = res.read()
        if res.status != 200:
            raise SystemExit(f"{method}: HTTP {res.status} {data[:300]!r}")
        return data

    def get(path):
        conn.request("GET", path, headers={k: v for k, v in headers.items() if k != "Content-Type"})
        res = conn.getresponse()
        data = res.read()
        if res.status != 200:
            raise SystemExit(f"GET {path}: HTTP {res.status} {data[:300]!r}")
        return data

    cases = [
        ("SelectMergeStacktraces job", lambda: post("SelectMergeStacktraces", {
            "profileTypeID": DEVICE, "labelSelector": f'{{service_name="{args.job}"}}', **span})),
        ("SelectMergeStacktraces profile", lambda: post("SelectMergeStacktraces", {
            "profileTypeID": DEVICE, "labelSelector": f'{{profile_id="{args.profile}"}}', **span})),
        ("SelectSeries job by node", lambda: post("SelectSeries", {
            "profileTypeID": DEVICE, "labelSelector": f'{{service_name="{args.job}"}}', "groupBy": ["node"],
            "step": 15, **span})),
        ("GET /api/v1/jobs/JOB/flamegraph", lambda: get(f"/api/v1/jobs/{args.job}/flamegraph")),
    ]
    for name, call in cases:
        first = call()  # warm: the summaries in the cache, a rollup kept
        ms = []
        for _ in range(args.iterations):
            t0 = time.perf_counter()
            call()
            ms.append((time.perf_counter() - t0) * 1000)
        ms.sort()
        print(f"  {name:34s} median {ms[len(ms) // 2]:8.2f} ms  p99 {ms[min(len(ms) - 1, len(ms) * 99 // 100)]:8.2f} ms"
              f"  ({args.iterations} runs, answer {len(first)} bytes)")


if __name__ == "__main__":
    main()
