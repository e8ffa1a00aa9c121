#!/usr/bin/python3
"""Checks fleetprof's Grafana dashboards against the code and, optionally, a live server.

    grafana_check.py --dashboards deploy/grafana/dashboards \
        [--provisioning deploy/grafana/provisioning] [--sources .] \
        [--url http://127.0.0.1:7071 --job JOB] [--token_file FILE]

(a) Every dashboard file is JSON with uid, title and panels; every panel, query and query
    variable names a data source by a uid that the provisioning YAML defines (and of its type).
(b) Every Prometheus expression (panels and variables) uses only metric names that the C++
    sources export: the "fleetprof_..." string literals in *.cc outside tests/ and build*/
    (histograms may add _bucket, _sum, _count).
(c) With --url: every Infinity query of every panel and variable is sent to the live server the
    way Grafana would send it (${job} -> --job, ${profile} -> the id of the job's newest profile,
    url_options.params appended), and must answer 200 with JSON whose root_selector is a
    non-empty array whose first row has every column selector.
(d) With --url: every query of the core Pyroscope data source (grafana-pyroscope-datasource) is
    sent as Grafana's Pyroscope backend sends it, a Connect call in JSON to
    /querier.v1.QuerierService/... over the dashboard's default time range (${job} -> --job):
    a flame graph query (queryType profile) is SelectMergeStacktraces and must answer a graph
    with a total > 0; a series query (metrics) is SelectSeries and must answer a series with
    points; a labelValue variable is LabelValues and must list --job; every profileTypeId must
    be one ProfileTypes lists.

Prints one line per check that passed; exits 1 at the first failure, naming it.
Standard library only; the token comes from --token_file or $FLEETPROF_TOKEN when given.
"""

import argparse
import json
import os
import pathlib
import re
import sys
import urllib.error
import urllib.parse
import urllib.request

INFINITY = "yesoreyeram-infinity-datasource"
PYROSCOPE = "grafana-pyroscope-datasource"
PROMETHEUS = "prometheus"
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")


class CheckFailed(Exception):
    pass


def fail(message):
    raise CheckFailed(message)


# ---------------------------------------------------------------- provisioning (simple YAML)

def strip_comment(line):
    """Drops a YAML comment; a '#' inside quotes or glued to text (url#frag) is kept."""
    out, quote = [], None
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            break
        out.append(ch)
    return "".join(out).rstrip()


def yaml_scalar(text):
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def provisioned_datasources(folder):
    """uid -> type for every item of a `datasources:` list in folder's *.yaml / *.yml files."""
    files = sorted(p for p in pathlib.Path(folder).rglob("*") if p.suffix in (".yaml", ".yml"))
    found = {}
    for path in files:
        lines = [strip_comment(l) for l in path.read_text().splitlines()]
        in_list, item_indent, item = False, None, None

        def close(item):
            if item is None:
                return
            if "uid" not in item:
                fail(f"{path}: data source {item.get('name', '?')!r} has no uid")
            found[item["uid"]] = item.get("type", "")

        for line in lines:
            if not line.strip():
                continue
            indent = len(line) - len(line.lstrip())
            if re.match(r"^datasources:\s*$", line):
                in_list, item_indent, item = True, None, None
                continue
            if in_list and indent == 0 and not line.lstrip().startswith("-"):
                close(item)
                in_list, item = False, None
                continue
            if not in_list:
                continue
            m = re.match(r"^(\s*)-\s+(.*)$", line)
            if m and (item_indent is None or len(m.group(1)) == item_indent):
                close(item)
                item_indent, item = len(m.group(1)), {}
                rest = m.group(2)
                key_indent = item_indent + 2
            else:
                if item is None:
                    continue
                rest = line.strip() if indent == key_indent else None
            if rest:
                kv = re.match(r"^([A-Za-z_][\w-]*):\s*(.*)$", rest)
                if kv and kv.group(1) in ("uid", "type", "name") and kv.group(2):
                    item[kv.group(1)] = yaml_scalar(kv.group(2))
        if in_list:
            close(item)
    if not found:
        fail(f"no data source with a uid in {folder} (*.yaml)")
    return found


# ---------------------------------------------------------------- dashboards

def load_dashboards(folder):
    files = sorted(pathlib.Path(folder).glob("*.json"))
    if not files:
        fail(f"no *.json dashboards in {folder}")
    dashboards, uids = [], {}
    for path in files:
        try:
            dash = json.loads(path.read_text())
        except json.JSONDecodeError as e:
            fail(f"{path}: not valid JSON: {e}")
        if not isinstance(dash, dict):
            fail(f"{path}: not a JSON object")
        for key in ("uid", "title"):
            if not isinstance(dash.get(key), str) or not dash[key]:
                fail(f"{path}: no {key}")
        if not isinstance(dash.get("panels"), list) or not dash["panels"]:
            fail(f"{path}: no panels")
        if dash["uid"] in uids:
            fail(f"{path}: uid {dash['uid']!r} also used by {uids[dash['uid']]}")
        uids[dash["uid"]] = path
        dashboards.append((path, dash))
    return dashboards


def all_panels(panels):
    for panel in panels:
        yield panel
        yield from all_panels(panel.get("panels") or [])  # collapsed rows keep theirs inside


def query_variables(dash):
    return [v for v in (dash.get("templating") or {}).get("list") or [] if v.get("type") == "query"]


def datasource_of(where, ds, known):
    """The provisioned type of a {"type","uid"} reference; fails on anything else."""
    if not isinstance(ds, dict) or not ds.get("uid"):
        fail(f"{where}: datasource must be {{\"type\", \"uid\"}}, found {json.dumps(ds)}")
    uid = ds["uid"]
    if uid not in known:
        fail(f"{where}: datasource uid {uid!r} is not provisioned (known: {', '.join(sorted(known))})")
    if ds.get("type") and known[uid] and ds["type"] != known[uid]:
        fail(f"{where}: datasource {uid!r} has type {ds['type']!r}, provisioned as {known[uid]!r}")
    return known[uid]


def check_structure(path, dash, known):
    """(a) Returns [(where, datasource type, kind, query)] for every panel query ("target") and
    query variable ("variable")."""
    queries, ids = [], set()
    name = dash["uid"]
    for panel in all_panels(dash["panels"]):
        title = panel.get("title") or f"panel {panel.get('id')}"
        where = f"{name} / {title}"
        pos = panel.get("gridPos")
        if not isinstance(pos, dict) or not all(isinstance(pos.get(k), int) for k in "xywh"):
            fail(f"{where}: gridPos needs integer x, y, w, h")
        if pos["x"] < 0 or pos["x"] + pos["w"] > 24:
            fail(f"{where}: gridPos is outside the 24 columns")
        if panel.get("id") in ids:
            fail(f"{where}: panel id {panel.get('id')} used twice")
        ids.add(panel.get("id"))
        if panel.get("type") == "row":
            continue
        if not (panel.get("description") or "").strip():
            fail(f"{where}: no description")
        panel_type = datasource_of(where, panel.get("datasource"), known)
        targets = panel.get("targets") or []
        if not targets:
            fail(f"{where}: no queries (targets)")
        for target in targets:
            ds_type = panel_type
            if "datasource" in target:
                ds_type = datasource_of(f"{where} query {target.get('refId')}", target["datasource"], known)
            queries.append((f"{where} [{target.get('refId', '?')}]", ds_type, "target", target))
    for var in query_variables(dash):
        where = f"{name} / variable ${var.get('name')}"
        ds_type = datasource_of(where, var.get("datasource"), known)
        queries.append((where, ds_type, "variable", var))
    print(f"ok    {path.name}: {dash['title']!r}, {len(ids)} panels, "
          f"{len(query_variables(dash))} query variables, data sources provisioned")
    return queries


# ---------------------------------------------------------------- (b) Prometheus metric names

def exported_metrics(root):
    names = set()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames
                       if not d.startswith((".", "build")) and d not in ("tests", "var", "node_modules")]
        for f in filenames:
            if f.endswith(".cc"):
                text = pathlib.Path(dirpath, f).read_text(errors="replace")
                names.update(re.findall(r'"(fleetprof_[A-Za-z0-9_:]+)"', text))
    if not names:
        fail(f'no "fleetprof_..." metric names in the *.cc files under {root}')
    return names


PROMQL_WORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left",
                "group_right", "bool", "offset", "inf", "nan", "start", "end"}


def promql_metrics(expr):
    """Metric names an expression selects: bare names plus __name__ matchers."""
    names = []
    for op, value in re.findall(r'__name__\s*(=~|=)\s*"([^"]*)"', expr):
        for alternative in (value.split("|") if op == "=~" else [value]):
            if not re.fullmatch(r"[A-Za-z_:][A-Za-z0-9_:]*", alternative):
                fail(f"cannot check the __name__ pattern {value!r}: list plain metric names with |")
            names.append(alternative)
    text = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`', '""', expr)
    text = re.sub(r"\$\{[^}]*\}|\$\w+|\[\[[^\]]*\]\]", " 1 ", text)  # Grafana variables
    text = re.sub(r"\{[^}]*\}", " ", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", " ", text)  # ranges and subqueries
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    for m in re.finditer(r"(?<![\w.])([A-Za-z_:][A-Za-z0-9_:]*)(\s*\()?", text):
        word, call = m.group(1), m.group(2)
        if call or word in PROMQL_WORDS:
            continue
        names.append(word)
    return names


def variable_promql(query):
    """The PromQL inside a Prometheus variable query (label_values, query_result)."""
    if isinstance(query, dict):
        query = query.get("query", "")
    query = (query or "").strip()
    m = re.fullmatch(r"label_values\((.*),\s*([A-Za-z_]\w*)\s*\)", query, re.S)
    if m:
        return [m.group(1)]
    if re.fullmatch(r"label_values\(\s*[A-Za-z_]\w*\s*\)|label_names\(.*\)|metrics\(.*\)", query, re.S):
        return []
    m = re.fullmatch(r"query_result\((.*)\)", query, re.S)
    return [m.group(1) if m else query]


def check_metrics(queries, known_metrics):
    checked = 0
    for where, ds_type, kind, q in queries:
        if ds_type != PROMETHEUS:
            continue
        exprs = variable_promql(q.get("query")) if kind == "variable" else [q.get("expr", "")]
        shown = q.get("query") if kind == "variable" else q.get("expr", "")
        if isinstance(shown, dict):
            shown = shown.get("query", "")
        for expr in exprs:
            if not expr.strip():
                fail(f"{where}: empty Prometheus expression")
            try:
                used = promql_metrics(expr)
            except CheckFailed as e:
                fail(f"{where}: {e}")
            for name in used:
                base = next((name[: -len(s)] for s in HISTOGRAM_SUFFIXES
                             if name.endswith(s) and name[: -len(s)] in known_metrics), name)
                if base not in known_metrics:
                    fail(f"{where}: metric {name!r} is not exported by the C++ sources "
                         f"(query: {shown})")
            checked += 1
            print(f"ok    {where}: metrics {', '.join(sorted(set(used))) or '(none)'}")
    return checked


# ---------------------------------------------------------------- (c) Infinity queries, live

class Server:
    def __init__(self, base, token):
        self.base = base.rstrip("/")
        self.token = token

    def url_for(self, url):
        if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", url):
            return url
        return self.base + "/" + url.lstrip("/")

    def get_json(self, url):
        request = urllib.request.Request(url, headers={"Accept": "application/json"})
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=15) as response:
                status, body = response.status, response.read()
        except urllib.error.HTTPError as e:
            detail = e.read()[:300].decode(errors="replace")
            fail(f"GET {url}: HTTP {e.code} {detail}")
        except (urllib.error.URLError, OSError) as e:
            fail(f"GET {url}: {getattr(e, 'reason', e)}")
        if status != 200:
            fail(f"GET {url}: HTTP {status}, want 200")
        try:
            return json.loads(body)
        except json.JSONDecodeError as e:
            fail(f"GET {url}: not JSON ({e}): {body[:200]!r}")


def substitute(text, values, where):
    """Grafana's ${var}, ${var:format}, $var and [[var]], as Infinity sends them (glob = raw)."""
    def value(name, fmt):
        if name not in values:
            fail(f"{where}: variable ${name} has no value in this check (known: {', '.join(values)})")
        v = values[name]
        if fmt in (None, "", "glob", "raw", "text"):
            return v
        if fmt in ("percentencode", "uriencode"):
            return urllib.parse.quote(v, safe="" if fmt == "percentencode" else "-_.!~*'()")
        fail(f"{where}: variable format :{fmt} is not supported by this check")

    text = re.sub(r"\$\{(\w+)(?::(\w+))?\}", lambda m: value(m.group(1), m.group(2)), text)
    text = re.sub(r"\[\[(\w+)(?::(\w+))?\]\]", lambda m: value(m.group(1), m.group(2)), text)
    return re.sub(r"\$(\w+)", lambda m: value(m.group(1), None), text)


def request_url(server, query, values, where):
    """The URL Infinity would GET: variables substituted, params added, query re-encoded."""
    url = substitute(query.get("url") or "", values, where)
    if not url:
        fail(f"{where}: Infinity query has no url")
    parts = urllib.parse.urlsplit(server.url_for(url))
    params = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    for kv in (query.get("url_options") or {}).get("params") or []:
        params.append((kv.get("key", ""), substitute(kv.get("value", ""), values, where)))
    path = urllib.parse.quote(parts.path, safe="/%:@!$&'()*+,;=-._~")
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, path,
                                    urllib.parse.urlencode(params, quote_via=urllib.parse.quote), ""))


def select(doc, selector):
    """Infinity's plain selectors: a dotted path (a.b.c); empty selects the document."""
    node = doc
    for key in [k for k in (selector or "").split(".") if k]:
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return KeyError
    return node


def infinity_query(kind, q):
    """A panel target is the query; a variable keeps it under query.infinityQuery."""
    if kind == "variable":
        query = q.get("query")
        if not isinstance(query, dict) or query.get("queryType") not in (None, "infinity"):
            fail(f"variable ${q.get('name')}: Infinity variable query must be queryType infinity")
        return query.get("infinityQuery") or query
    return q


def check_infinity(server, queries, job):
    latest = server.get_json(
        server.url_for("/api/v1/profiles?" + urllib.parse.urlencode({"job": job, "page_size": 1}, quote_via=urllib.parse.quote)))
    profiles = latest.get("profiles") if isinstance(latest, dict) else None
    if not profiles or not isinstance(profiles, list) or not profiles[0].get("profile_id"):
        fail(f"no profile of job {job!r} on {server.base}: upload one first "
             f"(/api/v1/profiles?job=... answered {json.dumps(latest)[:200]})")
    values = {"job": job, "profile": profiles[0]["profile_id"]}
    print(f"ok    latest profile of job {job!r}: {values['profile']}")
    checked = 0
    for where, ds_type, kind, q in queries:
        if ds_type != INFINITY:
            continue
        q = infinity_query(kind, q)
        if q.get("type") != "json" or q.get("source") != "url":
            fail(f"{where}: Infinity query must be type json from source url, "
                 f"found type {q.get('type')!r} source {q.get('source')!r}")
        method = (q.get("url_options") or {}).get("method", "GET")
        if method != "GET":
            fail(f"{where}: url_options.method is {method!r}; the dashboards only read (GET)")
        url = request_url(server, q, values, where)
        try:
            doc = server.get_json(url)
        except CheckFailed as e:
            fail(f"{where}: {e}")
        root = q.get("root_selector") or ""
        rows = select(doc, root)
        if rows is KeyError:
            fail(f"{where}: GET {url}: no {root!r} in the answer {json.dumps(doc)[:200]}")
        if not isinstance(rows, list) or not rows:
            fail(f"{where}: GET {url}: {root or 'the answer'} is not a non-empty array "
                 f"({json.dumps(rows)[:200]})")
        first = rows[0]
        for column in q.get("columns") or []:
            selector = column.get("selector", "")
            if select(first, selector) is KeyError:
                fail(f"{where}: GET {url}: first row of {root!r} has no {selector!r} "
                     f"(it has {', '.join(first) if isinstance(first, dict) else type(first).__name__})")
        checked += 1
        print(f"ok    {where}: GET {url} -> {len(rows)} rows")
    return checked


# ---------------------------------------------------------------- (d) Pyroscope queries, live

def connect_call(server, method, request):
    """A Connect unary call in JSON; the answer's JSON, or a failure naming the error."""
    url = server.url_for("/querier.v1.QuerierService/" + method)
    body = json.dumps(request).encode()
    http = urllib.request.Request(url, data=body, method="POST",
                                  headers={"Content-Type": "application/json",
                                           "Connect-Protocol-Version": "1"})
    if server.token:
        http.add_header("Authorization", f"Bearer {server.token}")
    try:
        with urllib.request.urlopen(http, timeout=30) as response:
            status, answer = response.status, response.read()
    except urllib.error.HTTPError as e:
        fail(f"POST {url} {body.decode()}: HTTP {e.code} {e.read()[:300].decode(errors='replace')}")
    except (urllib.error.URLError, OSError) as e:
        fail(f"POST {url}: {getattr(e, 'reason', e)}")
    if status != 200:
        fail(f"POST {url}: HTTP {status}, want 200")
    try:
        return json.loads(answer)
    except json.JSONDecodeError as e:
        fail(f"POST {url}: not JSON ({e}): {answer[:200]!r}")


def time_range_ms(dash, where):
    """The dashboard's default range ("now-7d" .. "now") in epoch ms."""
    now = int(__import__("time").time() * 1000)
    units = {"s": 1000, "m": 60000, "h": 3600000, "d": 86400000, "w": 604800000}

    def at(text):
        if text == "now":
            return now
        m = re.fullmatch(r"now-(\d+)([smhdw])", text or "")
        if not m:
            fail(f"{where}: time {text!r} is not now or now-N[smhdw]")
        return now - int(m.group(1)) * units[m.group(2)]

    t = dash.get("time") or {}
    return at(t.get("from", "now-6h")), at(t.get("to", "now"))


def check_pyroscope(server, dashboards, known, job):
    types = connect_call(server, "ProfileTypes", {})
    type_ids = {t.get("ID") for t in types.get("profileTypes") or []}
    if not type_ids:
        fail(f"ProfileTypes answered no profile types: {json.dumps(types)[:200]}")
    print(f"ok    ProfileTypes: {', '.join(sorted(type_ids))}")
    checked = 0
    for path, dash in dashboards:
        start, end = time_range_ms(dash, dash["uid"])
        values = {"job": job}
        for panel in all_panels(dash["panels"]):
            where = f"{dash['uid']} / {panel.get('title')}"
            for target in panel.get("targets") or []:
                ds = target.get("datasource") or panel.get("datasource")
                if datasource_of(where, ds, known) != PYROSCOPE:
                    continue
                where_q = f"{where} [{target.get('refId', '?')}]"
                type_id = target.get("profileTypeId")
                if type_id not in type_ids:
                    fail(f"{where_q}: profileTypeId {type_id!r} is not one ProfileTypes lists")
                selector = substitute(target.get("labelSelector") or "{}", values, where_q)
                query_type = target.get("queryType", "both")
                if query_type not in ("profile", "metrics", "both"):
                    fail(f"{where_q}: queryType {query_type!r} is not profile, metrics or both")
                if query_type in ("profile", "both"):
                    answer = connect_call(server, "SelectMergeStacktraces", {
                        "profileTypeID": type_id, "labelSelector": selector, "start": start, "end": end,
                        "maxNodes": 16384})
                    graph = answer.get("flamegraph") or {}
                    if int(graph.get("total", "0")) <= 0 or not graph.get("levels"):
                        fail(f"{where_q}: SelectMergeStacktraces {selector} answered no data: "
                             f"{json.dumps(answer)[:200]}")
                    print(f"ok    {where_q}: SelectMergeStacktraces {selector} -> total {graph['total']}, "
                          f"{len(graph.get('names') or [])} names")
                    checked += 1
                if query_type in ("metrics", "both"):
                    step = max(15.0, (end - start) / 1000 / 1000)
                    answer = connect_call(server, "SelectSeries", {
                        "profileTypeID": type_id, "labelSelector": selector, "start": start, "end": end,
                        "groupBy": target.get("groupBy") or [], "step": step})
                    series = answer.get("series") or []
                    if not series or not series[0].get("points"):
                        fail(f"{where_q}: SelectSeries {selector} answered no series: {json.dumps(answer)[:200]}")
                    print(f"ok    {where_q}: SelectSeries {selector} -> {len(series)} series")
                    checked += 1
        for var in query_variables(dash):
            where = f"{dash['uid']} / variable ${var.get('name')}"
            if datasource_of(where, var.get("datasource"), known) != PYROSCOPE:
                continue
            query = var.get("query") or {}
            if query.get("type") != "labelValue" or not query.get("labelName"):
                fail(f"{where}: a Pyroscope variable here must be a labelValue query with a labelName")
            answer = connect_call(server, "LabelValues", {"name": query["labelName"], "start": start, "end": end})
            if job not in (answer.get("names") or []):
                fail(f"{where}: LabelValues {query['labelName']} does not list {job!r}: {json.dumps(answer)[:200]}")
            print(f"ok    {where}: LabelValues {query['labelName']} -> {len(answer['names'])} values")
            checked += 1
    return checked


# ---------------------------------------------------------------- main

def main():
    here = pathlib.Path(__file__).resolve()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dashboards", required=True, help="folder of dashboard *.json files")
    parser.add_argument("--provisioning", help="folder of provisioning YAML "
                        "(default: DASHBOARDS/../provisioning)")
    parser.add_argument("--sources", default=str(here.parents[2]),
                        help="source root whose *.cc files define the metric names (default: the repo)")
    parser.add_argument("--url", help="fleetprof-server HTTP address, e.g. http://127.0.0.1:7071; "
                        "without it the live checks (c) and (d) are skipped")
    parser.add_argument("--job", help="job whose latest profile the live check reads (with --url)")
    parser.add_argument("--token_file", help="file with a bearer token (else $FLEETPROF_TOKEN)")
    args = parser.parse_args()
    if args.url and not args.job:
        parser.error("--url needs --job")
    provisioning = args.provisioning or str(pathlib.Path(args.dashboards).resolve().parent / "provisioning")
    token = os.environ.get("FLEETPROF_TOKEN", "")
    if args.token_file:
        token = pathlib.Path(args.token_file).read_text().strip()
    try:
        known = provisioned_datasources(provisioning)
        queries = []
        dashboards = load_dashboards(args.dashboards)
        for path, dash in dashboards:
            queries += check_structure(path, dash, known)
        metrics = exported_metrics(args.sources)
        n_prom = check_metrics(queries, metrics)
        n_inf = n_pyro = "skipped (no --url)"
        if args.url:
            n_inf = check_infinity(Server(args.url, token), queries, args.job)
            n_pyro = check_pyroscope(Server(args.url, token), dashboards, known, args.job)
    except CheckFailed as e:
        print(f"FAIL  {e}", file=sys.stderr)
        return 1
    print(f"grafana_check: ok ({n_prom} Prometheus expressions, Infinity queries: {n_inf}, "
          f"Pyroscope queries: {n_pyro})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
