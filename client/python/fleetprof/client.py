"""fleetprof.Client: one method per route of the server's HTTP API (docs/http-api.md)."""

import datetime
import json
import os
import re
import secrets
import socket
import ssl
import urllib.error
import urllib.parse
import urllib.request

from . import _grpc_upload, errors
from .capture import Capture
from .frames import Rows, table
from .profile import Profile

DEFAULT_URL = "http://127.0.0.1:7071"
_DURATION = re.compile(r"^(\d+)(ms|s|m|h|d)$")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60000, "h": 3600000, "d": 86400000}


def _duration_ms(value):
    """45s, 5m, 2h, 7d (as the CLI writes them), a timedelta, or a number of ms."""
    if isinstance(value, datetime.timedelta):
        return int(value.total_seconds() * 1000)
    if isinstance(value, str):
        match = _DURATION.match(value.strip())
        if not match:
            raise errors.InvalidArgument("bad duration %r (e.g. 45s, 5m, 2h, 7d)" % value)
        return int(match.group(1)) * _UNIT_MS[match.group(2)]
    return int(value)


def _labels(labels):
    """{"k": "v"} or ["k=v", …] as the repeated `label=k=v` parameter's values."""
    if not labels:
        return []
    if isinstance(labels, dict):
        return ["%s=%s" % (k, v) for k, v in labels.items()]
    if isinstance(labels, str):
        return [labels]
    return list(labels)


class Client:
    """A client of one fleetprof server's HTTP listener.

    url:   the HTTP listener, e.g. "http://127.0.0.1:7071" (default $FLEETPROF_HTTP, else that);
           "https://…" for TLS. A bare "host:port" means http, or https when `ca` is given.
    token: a bearer token (default $FLEETPROF_TOKEN); needed when the server has tokens on.
    ca:    a PEM file of the CA that signed the server's certificate (TLS).
    cert, key: a client certificate and key, for a server that asks for one (mTLS).
    grpc:  the gRPC listener, used by upload() only (default $FLEETPROF_SERVER, else the address
           the server reports for itself on /api/v1/cluster).
    timeout: seconds per request (30).

    Every table comes back as a pandas DataFrame when pandas imports, else as a list of dicts;
    columns are the JSON field names, integer ns stay integers. Errors raise fleetprof.Error
    subclasses chosen by the HTTP status, carrying the server's message.
    """

    def __init__(self, url=None, token=None, ca=None, *, cert=None, key=None, grpc=None, timeout=30):
        url = url or os.environ.get("FLEETPROF_HTTP") or DEFAULT_URL
        if "://" not in url:
            url = ("https://" if ca else "http://") + url
        self.url = url.rstrip("/")
        self.token = token if token is not None else os.environ.get("FLEETPROF_TOKEN") or None
        self.ca = ca
        self.timeout = timeout
        self._grpc = grpc or os.environ.get("FLEETPROF_SERVER") or None
        self._cert = (cert, key)
        self._context = self._ssl_context() if self.url.startswith("https://") else None

    def _ssl_context(self):
        context = ssl.create_default_context(cafile=self.ca)
        if self._cert[0]:
            context.load_cert_chain(self._cert[0], self._cert[1])
        return context

    def __repr__(self):
        return "fleetprof.Client(%r)" % self.url

    # ---- transport ----

    def request(self, method, path, params=None, body=None, stream_to=None):
        """One HTTP request: `path` under the listener (e.g. "/api/v1/profiles"), `params` a
        dict or a list of (name, value) pairs (None values left out, lists repeated). Returns
        the decoded JSON answer, or, with `stream_to` (a binary file), writes the body there."""
        query = []
        items = params.items() if isinstance(params, dict) else (params or [])
        for name, value in items:
            for one in value if isinstance(value, (list, tuple)) else [value]:
                if one is None:
                    continue
                if isinstance(one, bool):
                    one = "1" if one else "0"
                query.append((name, str(one)))
        url = self.url + path + ("?" + urllib.parse.urlencode(query) if query else "")
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(url, data=data, method=method)
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if self.token:
            request.add_header("Authorization", "Bearer " + self.token)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout, context=self._context) as answer:
                if stream_to is not None:
                    while True:
                        chunk = answer.read(1 << 20)
                        if not chunk:
                            return None
                        stream_to.write(chunk)
                return json.loads(answer.read())
        except urllib.error.HTTPError as e:
            text = e.read().decode("utf-8", "replace")
            try:
                error = json.loads(text)["error"]
                code, message = error.get("code", ""), error.get("message", "")
            except (ValueError, KeyError, TypeError, AttributeError):
                code, message = "", text.strip() or e.reason
            raise errors.from_http(e.code, code, message) from None
        except urllib.error.URLError as e:
            reason = e.reason
            if isinstance(reason, ssl.SSLError):
                raise errors.Unavailable("cannot reach %s over TLS (check that `ca` signed the "
                                         "server's certificate): %s" % (self.url, reason)) from None
            raise errors.Unavailable("cannot reach %s: %s" % (self.url, reason)) from None
        except (socket.timeout, ConnectionError) as e:
            raise errors.Unavailable("no answer from %s: %s" % (self.url, e)) from None

    def get(self, path, **params):
        """GET a route's JSON as it is (a dict): the escape hatch for anything not wrapped."""
        return self.request("GET", path, params)

    def _table(self, path, params, rows_field):
        answer = self.request("GET", path, params)
        rows = answer.pop(rows_field, []) or []
        return table(rows, answer)

    # ---- profiles ----

    def profiles(self, job=None, labels=None, since_ns=None, until_ns=None, limit=None):
        """Stored profiles, newest first (every page, or the first `limit`)."""
        rows, token = [], None
        while True:
            answer = self.request("GET", "/api/v1/profiles", [
                ("job", job), ("label", _labels(labels)), ("since_ns", since_ns),
                ("until_ns", until_ns), ("page_token", token)])
            rows.extend(answer.get("profiles", []))
            token = answer.get("next_page_token")
            if not token or (limit is not None and len(rows) >= limit):
                break
        return table(rows[:limit] if limit is not None else rows)

    def profile(self, profile_id):
        """One profile: a `Profile` (record, summary, its tables; shows itself in a notebook)."""
        answer = self.request("GET", "/api/v1/profiles/%s" % _quote(profile_id))
        return Profile(answer, self.url)

    def _breakdown(self, profile_id, what, limit):
        return self._table("/api/v1/profiles/%s/%s" % (_quote(profile_id), what), {"limit": limit}, what)

    def ops(self, profile_id, limit=None):
        """The op breakdown (the key_averages() view): count, total, self, device self/total."""
        return self._breakdown(profile_id, "ops", limit)

    def kernels(self, profile_id, limit=None):
        """Kernels merged across devices."""
        return self._breakdown(profile_id, "kernels", limit)

    def devices(self, profile_id, limit=None):
        """Per device: span, busy, idle, compute, communication, memory (= `fleetprof breakdown`)."""
        return self._breakdown(profile_id, "devices", limit)

    def steps(self, profile_id, limit=None):
        """Per step: start, end, duration, device busy and idle."""
        return self._breakdown(profile_id, "steps", limit)

    def memory(self, profile_id, limit=None):
        return self._breakdown(profile_id, "memory", limit)

    def xla_ops(self, profile_id, limit=None):
        return self._breakdown(profile_id, "xla_ops", limit)

    def stats(self, profile_id, report=None):
        """The nsys stats reports. With `report` one name: that report's table. Otherwise (None:
        all five; a list or "a,b": those) a dict {report name: table}. `nvtx_open_ranges` (NVTX
        ranges still open at the trace's end) is an attribute of the dict and in the table's
        `.attrs`."""
        names = report if isinstance(report, str) else ",".join(report) if report else None
        answer = self.request("GET", "/api/v1/profiles/%s/stats" % _quote(profile_id), {"report": names})
        open_ranges = answer.get("nvtx_open_ranges", 0)
        reports = StatsReports({name: table(rows, {"report": name, "nvtx_open_ranges": open_ranges})
                                for name, rows in answer.get("reports", {}).items()})
        reports.nvtx_open_ranges = open_ranges
        if isinstance(report, str) and "," not in report:
            return reports[report]
        return reports

    def diff(self, base, *profile_ids, by="kernel", limit=None):
        """Profiles side by side against `base`: one row per name (name, status, values: each
        profile's own row or None, total_ns_per_step). `.attrs`: by, profiles, steps."""
        return self._table("/api/v1/diff", [("base", base), ("profile", list(profile_ids)),
                                            ("by", by), ("limit", limit)], "rows")

    def diagnose(self, profile_id=None, *, job=None, thresholds=None, labels=None, since_ns=None,
                 until_ns=None):
        """Findings of the named rules for a profile, or for a job (`job=`). `thresholds`:
        {rule: value}. `.attrs["rules"]` describes every rule."""
        params = [("threshold", ["%s=%s" % kv for kv in (thresholds or {}).items()])]
        if job is not None:
            params += [("label", _labels(labels)), ("since_ns", since_ns), ("until_ns", until_ns)]
            return self._table("/api/v1/jobs/%s/diagnosis" % _quote(job), params, "findings")
        return self._table("/api/v1/profiles/%s/diagnosis" % _quote(profile_id), params, "findings")

    def trace(self, profile_id, start_ns=None, end_ns=None, resolution_ns=None, *, track=None,
              search=None, args=False, max_events_per_track=None):
        """A trace window: one row per exact event (`track` = its track's id, then the event's
        fields). `.attrs`: profile_id, start_ns, end_ns, resolution_ns and `tracks` (each track
        without its events, with the `merged` blocks of the shorter ones)."""
        answer = self.request("GET", "/api/v1/profiles/%s/trace" % _quote(profile_id), [
            ("start_ns", start_ns), ("end_ns", end_ns), ("resolution_ns", resolution_ns),
            ("track", track), ("search", search), ("args", True if args else None),
            ("max_events_per_track", max_events_per_track)])
        return _trace_table(answer)

    def flamegraph(self, profile_id=None, value="device_ns", *, job=None, labels=None,
                   since_ns=None, until_ns=None):
        """The call tree (value device_ns, host_self_ns or count) as one row per frame: level,
        start (its offset on the level), total, self, name. `.attrs`: total, max_self."""
        if job is not None:
            path = "/api/v1/jobs/%s/flamegraph" % _quote(job)
            params = [("value", value), ("label", _labels(labels)), ("since_ns", since_ns),
                      ("until_ns", until_ns)]
        else:
            path = "/api/v1/profiles/%s/flamegraph" % _quote(profile_id)
            params = [("value", value)]
        return flame_table(self.request("GET", path, params))

    def export(self, profile_id, path, format="original", start_ns=None, end_ns=None):
        """Writes the profile to `path` (format original, chrome_json or pprof) through
        `path.tmp`, renamed when whole; returns `path`."""
        tmp = path + ".tmp"
        try:
            with open(tmp, "wb") as f:
                self.request("GET", "/api/v1/profiles/%s/export" % _quote(profile_id),
                             [("format", format), ("start_ns", start_ns), ("end_ns", end_ns)], stream_to=f)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        return path

    def upload(self, path, job, labels=None, *, node=None, format=None, upload_id=None):
        """Stores the trace file at `path` under `job`; returns its profile id (a str) once it
        is indexed. The HTTP listener has no upload route, so this speaks gRPC (IngestService.
        Upload, with the standard library) to the listener the server reports for itself, or
        to `grpc=` / $FLEETPROF_SERVER. `upload_id` makes it idempotent (default: a new one)."""
        if not os.path.isfile(path):
            raise errors.InvalidArgument("upload: no such file: %s" % path)
        labels = dict(label.split("=", 1) for label in _labels(labels))
        upload_id = upload_id or "py-" + secrets.token_hex(12)
        grpc = self._grpc_url()
        context = None
        if grpc.startswith("https://"):
            context = self._ssl_context()
        answer = _grpc_upload.upload(grpc, context, self.token, path, job, labels,
                                     node or socket.gethostname(), format, upload_id, self.timeout * 10)
        return answer["profile_id"]

    def _grpc_url(self):
        scheme = "https" if self.url.startswith("https://") else "http"
        if self._grpc:
            return self._grpc if "://" in self._grpc else "%s://%s" % (scheme, self._grpc)
        http_host = urllib.parse.urlsplit(self.url)
        replicas = self.request("GET", "/api/v1/cluster").get("replicas", [])
        mine = [r for r in replicas if r.get("http_addr", "").rsplit(":", 1)[-1] == str(http_host.port)]
        chosen = (mine or [r for r in replicas if r.get("leader")] or replicas or [{}])[0]
        address = chosen.get("grpc_addr", "")
        if not address:
            raise errors.Unavailable("upload: the server does not say where its gRPC listener is; "
                                     "pass Client(grpc='HOST:PORT')")
        host, port = address.rsplit(":", 1)
        if host in ("0.0.0.0", "[::]", "::", ""):
            host = http_host.hostname if ":" not in http_host.hostname else "[%s]" % http_host.hostname
        return "%s://%s:%s" % (scheme, host, port)

    # ---- jobs ----

    def jobs(self, labels=None):
        return self._table("/api/v1/jobs", [("label", _labels(labels))], "jobs")

    def _job_params(self, labels, since_ns, until_ns):
        return [("label", _labels(labels)), ("since_ns", since_ns), ("until_ns", until_ns)]

    def job_ops(self, job, labels=None, since_ns=None, until_ns=None, *, table="ops"):
        """Every matching profile's ops (or, table="kernels", kernels) added up.
        `.attrs["profiles"]`: how many profiles."""
        answer = self.request("GET", "/api/v1/jobs/%s/ops" % _quote(job),
                              self._job_params(labels, since_ns, until_ns))
        return _pick(answer, table, ("ops", "kernels"))

    def job_series(self, job, labels=None, since_ns=None, until_ns=None):
        """One point per profile: rank, node, steps, median step, busy ratio, peak memory."""
        return self._table("/api/v1/jobs/%s/series" % _quote(job),
                           self._job_params(labels, since_ns, until_ns), "points")

    def collectives(self, job, capture_id=None, profiles=None, limit=None, *, table="collectives"):
        """Collectives matched across the ranks of a capture (or of `profiles`): one row per
        instance; table="ranks" per rank (waits, times last), table="profiles" each rank's clock."""
        answer = self.request("GET", "/api/v1/jobs/%s/collectives" % _quote(job), [
            ("capture_id", capture_id), ("profile", list(profiles or [])), ("limit", limit)])
        return _pick(answer, table, ("collectives", "ranks", "profiles"))

    # ---- fleet (issue 42: the routes of DESIGN.md "Always-on profiling") ----

    def fleet_top(self, by="kernel", since="24h", labels=None, limit=None):
        """Estimated device-time per kernel/op/job/node/device_type over the window, with 95%
        intervals (GET /api/v1/fleet/top). Raises NotFound on a server without fleet accounting."""
        return self._new_route("fleet top", "/api/v1/fleet/top", [
            ("by", by), ("since_ms", _duration_ms(since) if since is not None else None),
            ("label", _labels(labels)), ("limit", limit)], "rows")

    def regressions(self, job=None):
        """Regressions found per job (GET /api/v1/regressions). Raises NotFound on a server
        without regression detection."""
        return self._new_route("regressions", "/api/v1/regressions", [("job", job)], "regressions")

    def _new_route(self, what, path, params, rows_field):
        try:
            return self._table(path, params, rows_field)
        except errors.NotFound as e:
            if "no such page or API route" in e.message:
                raise RouteMissing("%s: this server does not serve %s yet (always-on profiling, "
                                   "issue 42): %s" % (what, path, e.message), e.code, e.status) from None
            raise

    # ---- agents and captures ----

    def agents(self):
        return self._table("/api/v1/agents", None, "agents")

    def captures(self, job=None, limit=None):
        return self._table("/api/v1/captures", {"job": job, "limit": limit}, "captures")

    def capture(self, job, duration_ms=None, iterations=None, *, node=None, target=None,
                start_delay_ms=None, record_shapes=None, profile_memory=None, with_stack=None,
                timeout_ms=None, request_id=None):
        """Starts a capture of every target of `job` (or one `node`, or one `target`) and
        returns a `Capture` handle; `handle.wait()` follows it and returns the profile ids."""
        body = {"job": job, "node": node, "target": target, "duration_ms": duration_ms,
                "iterations": iterations, "start_delay_ms": start_delay_ms,
                "record_shapes": record_shapes, "profile_memory": profile_memory,
                "with_stack": with_stack, "timeout_ms": timeout_ms,
                "request_id": request_id or "py-" + secrets.token_hex(8)}
        body = {k: v for k, v in body.items() if v is not None}
        return Capture(self, self.request("POST", "/api/v1/captures", body=body))

    def get_capture(self, capture_id):
        return Capture(self, self.request("GET", "/api/v1/captures/%s" % _quote(capture_id)))


class RouteMissing(errors.NotFound):
    """The server has no such route yet (an older server than this client)."""


class StatsReports(dict):
    """{report name: table}; `nvtx_open_ranges` as an attribute."""
    nvtx_open_ranges = 0


def _quote(segment):
    return urllib.parse.quote(str(segment), safe="")


def _pick(answer, which, tables):
    if which not in tables:
        raise errors.InvalidArgument("table must be one of %s" % ", ".join(tables))
    rows = answer.get(which, []) or []
    return table(rows, {k: v for k, v in answer.items() if k not in tables})


def _trace_table(answer):
    rows, tracks = [], []
    for track in answer.get("tracks", []):
        for event in track.get("events", []):
            row = {"track": track["id"]}
            row.update(event)
            rows.append(row)
        tracks.append({k: v for k, v in track.items() if k != "events"})
    attrs = {k: v for k, v in answer.items() if k != "tracks"}
    attrs["tracks"] = tracks
    return table(rows, attrs)


def flame_table(answer):
    """Pyroscope's FlameGraph layout as one row per frame: level, start, total, self, name."""
    names = answer.get("names", [])
    rows = []
    for level, entry in enumerate(answer.get("levels", [])):
        values = entry.get("values", [])
        position = 0
        for i in range(0, len(values), 4):
            offset, total, self_value, name = values[i:i + 4]
            start = position + offset
            rows.append({"level": level, "start": start, "total": total, "self": self_value,
                         "name": names[name]})
            position = start + total
    return table(rows, {"total": answer.get("total", 0), "max_self": answer.get("max_self", 0)})
