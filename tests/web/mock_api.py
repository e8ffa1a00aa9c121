#!/usr/bin/python3
"""A stand-in for fleetprof-server's HTTP side, for developing the web app without the server.

usage: mock_api.py [--port 0] [--web-dir server/http/web] [--corpus ../shared/corpus] [--token T]
                   [--page-size 100] [--proxy http://127.0.0.1:7071]

Serves the web app the way the server does (index.html for every page path, /assets/NAME from
the web folder) and the /api/v1 JSON API from fixtures: one profile per corpus reference file
(devices/kernels/ops from shared/corpus/reference/*.ref.json, plus made-up steps, memory, device
samples and XLA ops), many small profiles to exercise paging, a large one (thousands of kernels
and ops) to exercise row limits, two agents with devices, and captures that move through
PENDING → RUNNING → UPLOADING → INDEXED in about two seconds (job "flaky" fails one target).
With --token, every /api/v1 request needs `Authorization: Bearer T` (else 401). With --proxy URL,
/api/v1 goes to a real fleetprof-server instead, so the web files in this checkout can be tried
against the real API without rebuilding the server.
Prints "mock listening on http://127.0.0.1:PORT" once ready. Development aid only.
"""

import argparse
import copy
import glob
import json
import os
import random
import re
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
PAGE_PATHS = re.compile(r"^/(profiles(/[^/]+(/trace)?)?|compare|jobs/[^/]+|fleet|captures)?/?$")
CONTENT_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8",
                 ".html": "text/html; charset=utf-8", ".svg": "image/svg+xml"}
FIXTURE_JOBS = {
    "v100_resnet_rank0.pt.trace": ("resnet-train", "gpu-node-1", {"team": "vision", "rank": "0"}),
    "a100_nccl_rank0": ("llm-pretrain", "gpu-node-2", {"team": "llm", "rank": "0"}),
    "a100_alexnet": ("alexnet-bench", "gpu-node-2", {"team": "vision"}),
    "mi250_rocm62": ("rocm-toy", "amd-node-1", {"vendor": "amd"}),
    "mtia_inference_rank0": ("mtia-serving", "mtia-node-1", {"team": "inference"}),
    "tf_8gpu_multi_worker.xplane": ("tf-multiworker", "gpu-node-3", {"framework": "tf"}),
    "v100_resnet50_legacy_schema.pt.trace": ("resnet-train", "gpu-node-1", {"team": "vision", "schema": "2021"}),
}
GIB = 1 << 30
# The strictest policy the app works under: no inline script or style, nothing off the server.
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")


def now_ns():
    return time.time_ns()


def new_id(prefix=""):
    return f"{prefix}{now_ns():016x}{random.getrandbits(32):08x}"


class Fixtures:
    """All the data the mock serves; guarded by `lock` (captures change it)."""

    def __init__(self, corpus, rng):
        self.lock = threading.Lock()
        self.rng = rng
        self.profiles = []  # newest first: (info, summary)
        self.captures = {}  # capture_id -> {"capture": …, "plan": [(target, t_running, t_upload, t_done, fail)]}
        self.capture_order = []
        self.agents = self.make_agents()
        self.template = None
        self.load_corpus(corpus)

    # ---- profiles -------------------------------------------------------------------------
    def load_corpus(self, corpus):
        refs = sorted(glob.glob(os.path.join(corpus, "reference", "*.ref.json")))
        if not refs:
            sys.exit(f"mock_api: no reference files under {corpus}/reference")
        base_ingest = now_ns() - 3 * 86400 * 10**9
        small = None
        for i, path in enumerate(refs):
            name = os.path.basename(path)[:-len(".ref.json")]
            with open(path) as f:
                ref = json.load(f)
            job, node, labels = FIXTURE_JOBS.get(name, ("misc", "node-x", {}))
            summary = self.summary_from_reference(ref, with_samples=name.startswith("v100_resnet_rank0"))
            info = self.info_for(summary, job, node, labels, ref.get("file", name),
                                 base_ingest + i * 3600 * 10**9)
            self.profiles.append((info, summary))
            if name.startswith("a100_alexnet"):
                small = (info, summary)
            if name.startswith("v100_resnet_rank0"):
                self.template = summary
        # Paging: many small nightly runs, older than the corpus profiles.
        for n in range(140):
            summary = copy.deepcopy(small[1])
            info = self.info_for(summary, "alexnet-nightly", f"gpu-node-{n % 4 + 1}",
                                 {"run": f"nightly-{n:03d}"}, "nightly.pt.trace.json.gz",
                                 base_ingest - (n + 1) * 86400 * 10**9 // 4)
            self.profiles.append((info, summary))
        stress = self.stress_summary()
        self.profiles.append((self.info_for(stress, "stress-test", "gpu-node-4", {"kind": "synthetic"},
                                            "stress.pt.trace.json.gz", base_ingest + 30 * 3600 * 10**9), stress))
        self.profiles.sort(key=lambda p: p[0]["ingested_at_ns"], reverse=True)
        # The resnet rank-0 profile is the newest, as an upload right before a test would be.
        for i, (info, summary) in enumerate(self.profiles):
            if summary is self.template:
                info["ingested_at_ns"] = now_ns()
                self.profiles.insert(0, self.profiles.pop(i))
                break

    def info_for(self, summary, job, node, labels, file_name, ingested_at_ns):
        return {"profile_id": f"{ingested_at_ns:016x}{self.rng.getrandbits(32):08x}", "job": job, "node": node,
                "format": summary["format"], "start_ns": summary["start_ns"], "end_ns": summary["end_ns"],
                "labels": dict(labels), "file_name": file_name, "upload_id": new_id("u"),
                "size_bytes": 1000 + summary["events"] * 190, "ingested_at_ns": ingested_at_ns,
                "events": summary["events"], "skipped_events": 0}

    def summary_from_reference(self, ref, with_samples):
        devices = ref["devices"]
        start = min(d["start_ns"] for d in devices)
        end = max(d["end_ns"] for d in devices)
        xspace = ref.get("file", "").endswith(".pb")
        summary = {"devices": devices, "kernels": ref.get("kernels", []), "ops": ref.get("ops", []),
                   "steps": self.make_steps(devices[0], 8 if not xspace else 0),
                   "memory": [self.make_memory(d) for d in devices],
                   "metadata": {"schemaVersion": "1.0.1", "rank": "0"} if not xspace else {"host": "worker-0"},
                   "start_ns": start, "end_ns": end,
                   "events": sum(d["events"] for d in devices) * 11, "skipped_events": 0,
                   "format": "xspace" if xspace else "kineto_json"}
        if xspace:
            summary["xla_ops"] = self.make_xla_ops(ref.get("kernels", []))
        if with_samples:
            summary["device_samples"] = self.make_samples(devices, 12)
        return summary

    def make_steps(self, device, count):
        if count == 0:
            return []
        rng, span = self.rng, device["span_ns"]
        share = device["busy_ns"] / max(1, device["span_ns"])
        weights = [1.6] + [rng.uniform(0.85, 1.15) for _ in range(count - 1)]  # step 0 warms up
        steps, t = [], device["start_ns"]
        for i in range(count):
            duration = int(span * weights[i] / sum(weights))
            busy = int(duration * min(1.0, share * rng.uniform(0.85, 1.0)))
            steps.append({"step": i, "start_ns": t, "end_ns": t + duration, "duration_ns": duration,
                          "device_busy_ns": busy, "device_idle_ns": duration - busy})
            t += duration
        return steps

    def make_memory(self, device):
        rng = self.rng
        points, allocated, t = [], 2 * GIB + rng.randrange(GIB), device["start_ns"]
        dt = max(1, device["span_ns"] // 2250)  # steps average 1.5 dt
        peak, peak_ns = 0, t
        for i in range(1500):
            phase = (i % 300) / 300
            allocated = int(2 * GIB + 3 * GIB * phase + rng.randrange(64 << 20))
            if allocated > peak:
                peak, peak_ns = allocated, t
            points.append({"ts_ns": t, "allocated_bytes": allocated})
            t += dt + rng.randrange(dt)
        return {"device": device["device"], "samples": len(points), "peak_bytes": peak, "peak_ns": peak_ns,
                "timeline": points, "allocator_peak_bytes": peak + (256 << 20)}

    def make_xla_ops(self, kernels):
        rng, ops = self.rng, []
        categories = ["convolution", "convolution fusion", "loop fusion", "data formatting", "non-fusion elementwise"]
        for i in range(48):
            total = rng.randrange(20_000, 9_000_000)
            op = {"name": f"fusion.{i}" if i % 3 else f"convolution.{i}", "category": categories[i % 5],
                  "module": f"cluster_{i % 4}__XlaCompiledKernel_true__.{1000 + i}", "count": rng.randrange(1, 400),
                  "total_ns": total}
            if i % 7:
                op["flops"] = rng.randrange(10**8, 10**12)
                op["flops_per_second"] = op["flops"] / (total / 1e9)
                op["bytes_accessed"] = rng.randrange(10**6, 10**10)
                op["bytes_accessed_per_second"] = op["bytes_accessed"] / (total / 1e9)
            ops.append(op)
        return sorted(ops, key=lambda o: -o["total_ns"])

    def make_samples(self, devices, count):
        rng, samples, t = self.rng, [], now_ns() - count * 10**9
        for i in range(count):
            for d in devices:
                samples.append({"device": d["device"], "uuid": f"GPU-5f3c2a1e-{d['device']}", "model": "Tesla V100-SXM2-16GB",
                                "memory_used_bytes": int((6 + 5 * i / count) * GIB), "memory_total_bytes": 16 * GIB,
                                "utilization_ratio": round(rng.uniform(0.82, 0.99), 3),
                                "memory_utilization_ratio": round(rng.uniform(0.3, 0.6), 3),
                                "job_memory_used_bytes": {"resnet-train": int((5 + 5 * i / count) * GIB)},
                                "sampled_at_ns": t + i * 10**9, "has_utilization": True})
        return samples

    def stress_summary(self):
        rng = self.rng
        kernels = [{"name": f"void stress_kernel_{i}<float, {i % 17}>(float const*, float*, int)",
                    "kind": ["compute", "communication", "memory"][i % 3], "count": rng.randrange(1, 5000),
                    "total_ns": rng.randrange(1000, 10**8), "min_ns": 500, "max_ns": rng.randrange(2000, 10**7)}
                   for i in range(3000)]
        ops = [{"name": f"aten::stress_op_{i}", "count": rng.randrange(1, 10000), "total_ns": rng.randrange(10**4, 10**9),
                "self_ns": rng.randrange(-10**4, 10**8), "device_self_ns": rng.randrange(0, 10**7),
                "device_total_ns": rng.randrange(0, 10**8)} for i in range(6000)]
        kernels.sort(key=lambda k: (-k["total_ns"], k["name"]))
        ops.sort(key=lambda o: (-o["self_ns"], o["name"]))
        start = 1712195000000000000
        devices = [{"device": str(d), "events": 20000, "start_ns": start, "end_ns": start + 2 * 10**9,
                    "span_ns": 2 * 10**9, "busy_ns": 10**9 + d * 10**8, "idle_ns": 10**9 - d * 10**8,
                    "compute_ns": 8 * 10**8, "communication_ns": 4 * 10**8 + d * 10**8, "memory_ns": 10**8}
                   for d in range(8)]
        return {"devices": devices, "kernels": kernels, "ops": ops,
                "steps": self.make_steps(devices[0], 300), "memory": [], "metadata": {},
                "start_ns": start, "end_ns": start + 2 * 10**9, "events": 68692, "skipped_events": 3,
                "format": "kineto_json", "unknown_category_events": 12}

    def find_profile(self, profile_id):
        for info, summary in self.profiles:
            if info["profile_id"] == profile_id:
                return info, summary
        return None

    # ---- agents and captures ----------------------------------------------------------------
    def make_agents(self):
        def gpus(n, model, total):
            return [{"device": str(i), "uuid": f"GPU-{i:02d}ab", "model": model, "memory_used_bytes": 0,
                     "memory_total_bytes": total, "utilization_ratio": 0.0, "memory_utilization_ratio": 0.0,
                     "job_memory_used_bytes": {}, "sampled_at_ns": 0, "has_utilization": True} for i in range(n)]
        return [
            {"node": "gpu-node-1", "state": "CONNECTED", "version": "0.4.0",
             "targets": [{"job": "resnet-train", "kind": "kineto", "pid": 4242, "address": ""},
                         {"job": "flaky", "kind": "xprof", "pid": 5151, "address": "127.0.0.1:9012"}],
             "devices": gpus(2, "Tesla V100-SXM2-16GB", 16 * GIB)},
            {"node": "gpu-node-2", "state": "CONNECTED", "version": "0.4.0",
             "targets": [{"job": "llm-pretrain", "kind": "kineto", "pid": 7001, "address": ""},
                         {"job": "llm-pretrain", "kind": "kineto", "pid": 7002, "address": ""},
                         {"job": "flaky", "kind": "xprof", "pid": 5252, "address": "127.0.0.1:9013"}],
             "devices": gpus(8, "NVIDIA A100-SXM4-80GB", 80 * GIB)},
            {"node": "old-node-7", "state": "DISCONNECTED", "version": "0.3.2", "targets": [], "devices": []},
        ]

    def agents_now(self):
        t = now_ns()
        agents = copy.deepcopy(self.agents)
        for a in agents:
            a["last_seen_ns"] = t - (self.rng.randrange(10**9) if a["state"] == "CONNECTED" else 3600 * 10**9)
            for d in a["devices"]:
                d["memory_used_bytes"] = int(d["memory_total_bytes"] * self.rng.uniform(0.3, 0.9))
                d["utilization_ratio"] = round(self.rng.uniform(0.4, 1.0), 3)
                d["memory_utilization_ratio"] = round(self.rng.uniform(0.2, 0.7), 3)
                d["sampled_at_ns"] = t
        return agents

    def start_capture(self, request):
        job, node = request.get("job", ""), request.get("node", "")
        duration_ms = int(request.get("duration_ms") or 0) or 500
        t = now_ns()
        capture = {"capture_id": new_id("c"), "state": "RUNNING", "targets": [], "error": "",
                   "created_at_ns": t, "start_time_unix_ns": t, "deadline_unix_ns": t + 60 * 10**9,
                   "request": {k: v for k, v in request.items() if v not in ("", 0, None)}}
        plan = []
        for a in self.agents:
            if a["state"] != "CONNECTED" or (node and a["node"] != node):
                continue
            for tg in a["targets"]:
                if tg["job"] != job:
                    continue
                name = f"xprof:{tg['address']}" if tg["kind"] == "xprof" else f"kineto:pid={tg['pid']}"
                capture["targets"].append({"node": a["node"], "target": name, "state": "PENDING", "profile_id": "",
                                           "error": "", "job": tg["job"], "kind": tg["kind"], "pid": tg["pid"]})
                running = t + 300 * 10**6
                upload = running + duration_ms * 10**6
                plan.append((running, upload, upload + 700 * 10**6, job == "flaky" and a["node"] == "gpu-node-2"))
        if not plan:
            capture["state"] = "FAILED"
            capture["error"] = (f"no process matched job {job}" + (f" on node {node}" if node else "") +
                                ": no connected agent reports such a target")
        self.captures[capture["capture_id"]] = {"capture": capture, "plan": plan}
        self.capture_order.insert(0, capture["capture_id"])
        return self.advance(capture["capture_id"])

    def advance(self, capture_id):
        """Moves the capture's targets along their plan; returns the capture now."""
        entry = self.captures[capture_id]
        capture, t = entry["capture"], now_ns()
        for target, (running, upload, done, fail) in zip(capture["targets"], entry["plan"]):
            if target["state"] in ("INDEXED", "FAILED"):
                continue
            if t >= done:
                if fail:
                    target["state"] = "FAILED"
                    target["error"] = f"{target['target']}: connection refused (is the job's profiler server running?)"
                else:
                    summary = copy.deepcopy(self.template)
                    info = self.info_for(summary, target["job"], target["node"], {"capture_id": capture_id},
                                         "capture.pt.trace.json.gz", t)
                    self.profiles.insert(0, (info, summary))
                    target["state"] = "INDEXED"
                    target["profile_id"] = info["profile_id"]
            elif t >= upload:
                target["state"] = "UPLOADING"
            elif t >= running:
                target["state"] = "RUNNING"
        states = [tg["state"] for tg in capture["targets"]]
        if not states:
            capture["state"] = "FAILED"
        elif any(s not in ("INDEXED", "FAILED") for s in states):
            capture["state"] = "RUNNING"
        elif all(s == "INDEXED" for s in states):
            capture["state"] = "DONE"
        elif all(s == "FAILED" for s in states):
            capture["state"] = "FAILED"
        else:
            capture["state"] = "PARTIAL"
        return copy.deepcopy(capture)


class ApiError(Exception):
    STATUS = {"INVALID_ARGUMENT": 400, "UNAUTHENTICATED": 401, "NOT_FOUND": 404}

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def list_profiles(fx, params, default_page_size):
    job = params.get("job", [""])[0]
    labels = []
    for label in params.get("label", []):
        if "=" not in label:
            raise ApiError("INVALID_ARGUMENT", f"label '{label}' is not key=value")
        labels.append(tuple(label.split("=", 1)))
    try:
        since = int(params.get("since_ns", ["0"])[0] or 0)
        until = int(params.get("until_ns", ["0"])[0] or 0)
        page_size = int(params.get("page_size", [str(default_page_size)])[0] or default_page_size)
        offset = int(params.get("page_token", ["0"])[0] or 0)
    except ValueError as e:
        raise ApiError("INVALID_ARGUMENT", f"bad query parameter: {e}")
    page_size = max(1, min(page_size, 1000))
    matched = [info for info, _ in fx.profiles
               if (not job or info["job"] == job)
               and all(info["labels"].get(k) == v for k, v in labels)
               and (not since or info["end_ns"] >= since) and (not until or info["start_ns"] <= until)]
    page = matched[offset:offset + page_size]
    next_token = str(offset + page_size) if offset + page_size < len(matched) else ""
    return {"profiles": page, "next_page_token": next_token}


def api_get(fx, path, params, default_page_size):
    parts = path.strip("/").split("/")[2:]  # after api/v1
    if parts == ["profiles"]:
        return list_profiles(fx, params, default_page_size)
    if len(parts) in (2, 3) and parts[0] == "profiles":
        found = fx.find_profile(parts[1])
        if not found:
            raise ApiError("NOT_FOUND", f"profile '{parts[1]}' not found")
        info, summary = found
        if len(parts) == 2:
            return {"profile": info, "summary": summary}
        if parts[2] in ("ops", "kernels", "devices", "steps", "memory", "xla_ops"):
            return {parts[2]: summary.get(parts[2], [])}
    if parts == ["agents"]:
        return {"agents": fx.agents_now()}
    if parts == ["captures"]:
        job = params.get("job", [""])[0]
        captures = [fx.advance(cid) for cid in fx.capture_order]
        return {"captures": [c for c in captures if not job or c["request"].get("job") == job][:50]}
    if len(parts) == 2 and parts[0] == "captures":
        if parts[1] not in fx.captures:
            raise ApiError("NOT_FOUND", f"capture {parts[1]}: not found")
        return fx.advance(parts[1])
    raise ApiError("NOT_FOUND", f"no API at {path}")


def api_post(fx, path, body):
    if path.rstrip("/") != "/api/v1/captures":
        raise ApiError("NOT_FOUND", f"no API at {path}")
    try:
        request = json.loads(body or b"{}")
    except ValueError:
        raise ApiError("INVALID_ARGUMENT", "body is not JSON")
    if not isinstance(request, dict):
        raise ApiError("INVALID_ARGUMENT", "body must be a JSON object")
    for key in ("duration_ms", "iterations"):
        if not isinstance(request.get(key, 0), int) or request.get(key, 0) < 0:
            raise ApiError("INVALID_ARGUMENT", "duration_ms, iterations and start_delay_ms must be >= 0")
    if not request.get("job") and not request.get("node"):
        raise ApiError("INVALID_ARGUMENT", "name a job, a node or a target to capture")
    return fx.start_capture(request)


def make_handler(fx, web_dir, token, page_size, proxy):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):  # quiet; errors still go to stderr below
            pass

        def send_body(self, status, content_type, body, headers=None):
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("X-Content-Type-Options", "nosniff")
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def send_json(self, status, obj):
            self.send_body(status, "application/json", json.dumps(obj).encode())

        def send_error_json(self, err):
            self.send_json(ApiError.STATUS.get(err.code, 500), {"error": {"code": err.code, "message": str(err)}})

        def proxy_api(self, method):
            """--proxy: forwards the request to a real server and relays its answer."""
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            headers = {k: v for k, v in self.headers.items() if k.lower() in ("authorization", "content-type", "accept")}
            request = urllib.request.Request(proxy + self.path, data=body, method=method, headers=headers)
            try:
                with urllib.request.urlopen(request, timeout=30) as response:
                    status, content_type, data = response.status, response.headers.get("Content-Type"), response.read()
            except urllib.error.HTTPError as e:
                status, content_type, data = e.code, e.headers.get("Content-Type"), e.read()
            except OSError as e:
                status, content_type = 503, "application/json"
                data = json.dumps({"error": {"code": "UNAVAILABLE", "message": f"proxy: {e}"}}).encode()
            self.send_body(status, content_type or "application/octet-stream", data)

        def handle_api(self, method):
            url = urllib.parse.urlsplit(self.path)
            if token and self.headers.get("Authorization") != f"Bearer {token}":
                raise ApiError("UNAUTHENTICATED", "missing or unknown bearer token")
            with fx.lock:
                if method == "GET":
                    return api_get(fx, url.path, urllib.parse.parse_qs(url.query), page_size)
                length = int(self.headers.get("Content-Length") or 0)
                return api_post(fx, url.path, self.rfile.read(length))

        def do_GET(self):
            path = urllib.parse.urlsplit(self.path).path
            try:
                if path.startswith("/api/v1/") and proxy:
                    return self.proxy_api("GET")
                if path.startswith("/api/v1/"):
                    return self.send_json(200, self.handle_api("GET"))
                if path.startswith("/assets/"):
                    name = path[len("/assets/"):]
                    file = os.path.join(web_dir, name)
                    ext = os.path.splitext(name)[1]
                    if "/" in name or ext not in (".js", ".css") or not os.path.isfile(file):
                        return self.send_body(404, "text/plain", b"not found\n")
                    with open(file, "rb") as f:
                        return self.send_body(200, CONTENT_TYPES[ext], f.read())
                if PAGE_PATHS.match(path):
                    with open(os.path.join(web_dir, "index.html"), "rb") as f:
                        return self.send_body(200, CONTENT_TYPES[".html"], f.read(), {"Content-Security-Policy": CSP})
                if path == "/healthz":
                    return self.send_body(200, "text/plain", b"ok\n")
                return self.send_body(404, "text/plain", b"not found\n")
            except ApiError as e:
                return self.send_error_json(e)

        do_HEAD = do_GET

        def do_POST(self):
            if proxy:
                return self.proxy_api("POST")
            try:
                self.send_json(200, self.handle_api("POST"))
            except ApiError as e:
                self.send_error_json(e)

    return Handler


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--web-dir", default=os.path.join(ROOT, "server", "http", "web"))
    parser.add_argument("--corpus", default=os.path.join(ROOT, "..", "shared", "corpus"))
    parser.add_argument("--token", default="", help="require this bearer token on /api/v1")
    parser.add_argument("--page-size", type=int, default=100, help="default page size of /api/v1/profiles")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--proxy", default="", metavar="URL",
                        help="forward /api/v1 to this real server (e.g. http://127.0.0.1:7071) instead of fixtures")
    args = parser.parse_args()
    fx = Fixtures(os.path.abspath(args.corpus), random.Random(args.seed))
    server = ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(fx, args.web_dir, args.token, args.page_size, args.proxy.rstrip("/")))
    server.daemon_threads = True
    print(f"mock listening on http://127.0.0.1:{server.server_address[1]}", flush=True)
    newest = fx.profiles[0][0]
    top_kernel = fx.template["kernels"][0]["name"]
    dev = fx.template["devices"][0]
    print(f"newest profile {newest['profile_id']} (job {newest['job']}); top kernel: {top_kernel}; "
          f"busy {100 * dev['busy_ns'] / dev['span_ns']:.1f}%", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
