#!/usr/bin/python3
"""Checks fleetprof's web app in a real headless Chromium, driven over the DevTools protocol.

usage: browser_check.py --url http://127.0.0.1:PORT --profile-id ID --screenshots DIR
                        [--expect-kernel NAME] [--expect-busy-pct 98.4%]
                        [--expect-agent NODE] [--capture-job JOB [--capture-node NODE]]
                        [--expect-finding RULE [--findings-profile ID]] [--compare-with ID2] [--job JOB]
                        [--chromium /usr/bin/chromium]

Checks, in order (one line each; the first failure ends the run with exit status 1):
  (a) /profiles/ID shows the kernel table (with --expect-kernel NAME as a row) and a
      .device-busy-share element whose text contains --expect-busy-pct; clicking the kernel
      table's "count" header puts the sort into the URL, and reloading that URL keeps the sort.
  (b) the profiles list shows ID, and its link opens the profile without a page reload.
  (c) /fleet loads (with --expect-agent: shows that node's row) and refreshes by itself.
  (d) with --capture-job: /captures starts a capture of the job, every target reaches INDEXED
      within 120 s, each links to its profile, and /captures?capture=ID reopens it.
  (e) an unknown profile id shows the error banner instead of a blank page.
  (f) with --expect-finding RULE: the profile page lists that finding, and its evidence link
      opens the trace viewer on exactly the linked range.
  (g) with --compare-with ID2: /compare shows a bar per profile in each row; a status filter
      goes into the URL.
  (h) with --job JOB: /jobs/JOB shows ranks, series dots, findings and the summed kernels.
  (i) with --expect-fleet-kernel NAME and --expect-fleet-job JOB: /fleet's accounting card shows
      that kernel among its top kernels and that job among its top jobs, each with an interval
      and a share, the busy and idle totals, and the sampling status.
Throughout: every request must go to the server's own host and port, and the page must log no
console error and throw no exception (except the 404 that (e) provokes on purpose).
Screenshots (PNG) go to --screenshots DIR; their paths are printed at the end.
Needs only the Python standard library (a minimal RFC 6455 client is included).
"""

import argparse
import base64
import collections
import hashlib
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.parse


class CheckFailed(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# A minimal WebSocket client (RFC 6455): text frames out (masked), frames in, ping/pong, close.

WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


class WebSocket:
    def __init__(self, url, timeout=10):
        parts = urllib.parse.urlsplit(url)
        self.sock = socket.create_connection((parts.hostname, parts.port), timeout)
        self.buffer = b""
        key = base64.b64encode(os.urandom(16)).decode()
        request = (f"GET {parts.path or '/'} HTTP/1.1\r\nHost: {parts.hostname}:{parts.port}\r\n"
                   "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                   f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")
        self.sock.sendall(request.encode())
        deadline = time.monotonic() + timeout
        while b"\r\n\r\n" not in self.buffer:
            self._fill(deadline)
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        if " 101 " not in lines[0] + " ":
            raise ConnectionError(f"websocket upgrade refused: {lines[0]}")
        accept = base64.b64encode(hashlib.sha1((key + WS_GUID).encode()).digest()).decode()
        headers = {k.strip().lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:] if ":" in l)}
        if headers.get("sec-websocket-accept") != accept:
            raise ConnectionError("websocket upgrade: wrong Sec-WebSocket-Accept")

    def _fill(self, deadline):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("websocket read timed out")
        self.sock.settimeout(remaining)
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise ConnectionError("websocket closed by the browser")
        self.buffer += chunk

    def _take(self, n, deadline):
        while len(self.buffer) < n:
            self._fill(deadline)
        data, self.buffer = self.buffer[:n], self.buffer[n:]
        return data

    def _send_frame(self, opcode, payload):
        n = len(payload)
        header = bytes([0x80 | opcode])
        if n < 126:
            header += bytes([0x80 | n])
        elif n < 1 << 16:
            header += bytes([0x80 | 126]) + struct.pack("!H", n)
        else:
            header += bytes([0x80 | 127]) + struct.pack("!Q", n)
        mask = os.urandom(4)
        key = (mask * (n // 4 + 1))[:n]
        masked = (int.from_bytes(payload, "big") ^ int.from_bytes(key, "big")).to_bytes(n, "big") if n else b""
        self.sock.sendall(header + mask + masked)

    def send_text(self, text):
        self._send_frame(0x1, text.encode())

    def recv_text(self, timeout):
        """Returns the next text message; raises TimeoutError when none arrives in time."""
        deadline = time.monotonic() + timeout
        message = b""
        while True:
            b0, b1 = self._take(2, deadline)
            opcode, n = b0 & 0x0F, b1 & 0x7F
            if n == 126:
                n = struct.unpack("!H", self._take(2, deadline))[0]
            elif n == 127:
                n = struct.unpack("!Q", self._take(8, deadline))[0]
            mask = self._take(4, deadline) if b1 & 0x80 else None
            payload = self._take(n, deadline)
            if mask:
                key = (mask * (n // 4 + 1))[:n]
                payload = (int.from_bytes(payload, "big") ^ int.from_bytes(key, "big")).to_bytes(n, "big")
            if opcode == 0x9:
                self._send_frame(0xA, payload)
                continue
            if opcode == 0x8:
                raise ConnectionError("websocket closed by the browser")
            if opcode in (0x0, 0x1, 0x2):
                message += payload
                if b0 & 0x80:
                    return message.decode("utf-8")

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


# ---------------------------------------------------------------------------------------------
# Chrome DevTools Protocol over that socket

class Cdp:
    def __init__(self, ws, on_event):
        self.ws = ws
        self.on_event = on_event
        self.next_id = 0

    def call(self, method, params=None, session=None, timeout=30):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        self.ws.send_text(json.dumps(message))
        deadline = time.monotonic() + timeout
        while True:
            reply = json.loads(self.ws.recv_text(max(0.01, deadline - time.monotonic())))
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise CheckFailed(f"DevTools {method} failed: {reply['error'].get('message')}")
                return reply.get("result", {})
            if "method" in reply:
                self.on_event(reply)

    def pump(self, seconds):
        """Processes events for `seconds`."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                reply = json.loads(self.ws.recv_text(max(0.01, deadline - time.monotonic())))
            except (TimeoutError, socket.timeout):
                return
            if "method" in reply:
                self.on_event(reply)


# ---------------------------------------------------------------------------------------------
# The browser: launch, one page, and what it saw

class Browser:
    def __init__(self, chromium, server_url, screenshot_dir):
        self.server = urllib.parse.urlsplit(server_url)
        self.base = f"{self.server.scheme}://{self.server.netloc}"
        self.screenshot_dir = screenshot_dir
        self.screenshots = []
        self.requests = []
        self.errors = []
        self.allowed_error = None  # predicate(entry) for errors a check provokes on purpose
        self.profile_dir = tempfile.mkdtemp(prefix="fleetprof-chromium-")
        self.log = open(os.path.join(self.profile_dir, "chromium.log"), "wb")
        self.proc = subprocess.Popen(
            [chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--remote-debugging-port=0",
             f"--user-data-dir={self.profile_dir}", "--no-first-run", "--no-default-browser-check",
             "--disable-extensions", "--disable-background-networking", "--disable-sync",
             "--disable-component-update", "--window-size=1440,1000", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=self.log, start_new_session=True)
        self.ws = None
        self.session = None
        try:
            self.ws = WebSocket(self._devtools_url(), timeout=10)
            self.cdp = Cdp(self.ws, self._on_event)
            target = self.cdp.call("Target.createTarget", {"url": "about:blank"})["targetId"]
            self.session = self.cdp.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
            for domain in ("Page", "Runtime", "Network", "Log"):
                self.call(f"{domain}.enable")
            self.call("Emulation.setDeviceMetricsOverride",
                      {"width": 1440, "height": 1000, "deviceScaleFactor": 1, "mobile": False})
        except BaseException:
            self.close()  # never leave chromium running
            raise

    def _devtools_url(self):
        path = os.path.join(self.profile_dir, "DevToolsActivePort")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise CheckFailed(f"chromium exited with status {self.proc.returncode} at start "
                                  f"(log: {self.log.name})")
            try:
                with open(path) as f:
                    lines = f.read().split()
                if len(lines) >= 2:
                    return f"ws://127.0.0.1:{lines[0]}{lines[1]}"
            except FileNotFoundError:
                pass
            time.sleep(0.05)
        raise CheckFailed("chromium did not write DevToolsActivePort within 30 s")

    def close(self):
        if self.ws:
            self.ws.close()
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=5)
            except (subprocess.TimeoutExpired, ProcessLookupError, PermissionError):
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
                self.proc.wait(timeout=5)
        self.log.close()
        shutil.rmtree(self.profile_dir, ignore_errors=True)

    # ---- events ----
    def _on_event(self, message):
        if message.get("sessionId") != self.session:
            return
        method, params = message["method"], message.get("params", {})
        if method == "Network.requestWillBeSent":
            url = params["request"]["url"]
            self.requests.append(url)
            if not self._same_host(url):
                self.errors.append(f"request to another host: {url}")
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", []))
            self._error({"kind": "console", "text": text})
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            text = details.get("exception", {}).get("description") or details.get("text", "")
            self._error({"kind": "exception", "text": text})
        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
            entry = params["entry"]
            self._error({"kind": "log", "source": entry.get("source"), "url": entry.get("url", ""),
                         "text": entry.get("text", "")})

    def _error(self, entry):
        if self.allowed_error and self.allowed_error(entry):
            return
        where = f" ({entry['url']})" if entry.get("url") else ""
        self.errors.append(f"{entry['kind']} error: {entry['text']}{where}")

    def _same_host(self, url):
        parts = urllib.parse.urlsplit(url)
        if parts.scheme in ("data", "blob", "about"):
            return True
        default = {"http": 80, "https": 443, "ws": 80, "wss": 443}.get(parts.scheme)
        server_default = {"http": 80, "https": 443}.get(self.server.scheme)
        return (parts.hostname == self.server.hostname and
                (parts.port or default) == (self.server.port or server_default))

    def assert_clean(self, context):
        self.cdp.pump(0.2)
        if self.errors:
            raise CheckFailed(f"{context}: " + "; ".join(self.errors[:5]))

    # ---- actions ----
    def call(self, method, params=None, timeout=30):
        return self.cdp.call(method, params, session=self.session, timeout=timeout)

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True})
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            raise CheckFailed(f"evaluating {expression[:80]!r} threw: "
                              f"{details.get('exception', {}).get('description') or details.get('text')}")
        return result.get("result", {}).get("value")

    def wait_for(self, expression, what, timeout=15):
        """Polls a JS expression until it is truthy; returns its value. The value crosses as JSON,
        so test for elements with `!!` (a DOM node arrives as an empty, falsy dict)."""
        deadline = time.monotonic() + timeout
        guarded = f"(() => {{ try {{ return ({expression}); }} catch (e) {{ return null; }} }})()"
        while True:
            value = self.evaluate(guarded)
            if value:
                return value
            if time.monotonic() > deadline:
                banner = self.evaluate("document.querySelector('#banner')?.textContent || ''")
                raise CheckFailed(f"timed out after {timeout} s waiting for {what}" +
                                  (f"; banner says: {banner}" if banner else ""))
            self.cdp.pump(0.1)

    def navigate(self, path):
        self.call("Page.navigate", {"url": self.base + path})
        self.wait_for("document.readyState === 'complete' && !!document.querySelector('#main')",
                      f"{path} to load")

    def reload(self):
        self.call("Page.reload", {"ignoreCache": True})
        self.cdp.pump(0.2)
        self.wait_for("document.readyState === 'complete'", "the reload")

    def click(self, selector):
        ok = self.evaluate(f"(() => {{ const el = document.querySelector({json.dumps(selector)}); "
                           "if (!el) return false; el.click(); return true; })()")
        if not ok:
            raise CheckFailed(f"nothing to click at {selector}")

    def set_value(self, selector, value):
        ok = self.evaluate(f"(() => {{ const el = document.querySelector({json.dumps(selector)}); "
                           f"if (!el) return false; el.value = {json.dumps(value)}; "
                           "el.dispatchEvent(new Event('input', {bubbles: true})); "
                           "el.dispatchEvent(new Event('change', {bubbles: true})); return true; })()")
        if not ok:
            raise CheckFailed(f"no input at {selector}")

    def screenshot(self, name, selector=None):
        """The whole page, or only the element `selector` matches."""
        self.cdp.pump(0.3)  # let charts drawn on the next animation frame appear
        metrics = self.call("Page.getLayoutMetrics")
        size = metrics.get("cssContentSize") or metrics["contentSize"]
        clip = {"x": 0, "y": 0, "width": size["width"], "height": min(size["height"], 12000), "scale": 1}
        beyond = True
        if selector:  # in view, as the user sees it (a capture beyond the viewport resizes the page)
            box = self.evaluate(f"(() => {{ const e = document.querySelector({json.dumps(selector)}); e.scrollIntoView({{block: 'nearest'}});"
                                " const r = e.getBoundingClientRect();"
                                " return {x: r.left + window.scrollX, y: r.top + window.scrollY, width: r.width, height: r.height}; })()")
            clip = dict(box, scale=1)
            beyond = False
        data = self.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": beyond, "clip": clip},
                         timeout=60)["data"]
        path = os.path.join(self.screenshot_dir, f"{name}.png")
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
        self.screenshots.append(path)
        return path


# ---------------------------------------------------------------------------------------------
# The checks

NO_ERROR_BANNER = "!document.querySelector('#banner.error')"


def table_column(selector, key):
    return (f"[...document.querySelectorAll({json.dumps(selector + ' tbody tr')})]"
            f".map(tr => tr.querySelector('td[data-key=\"{key}\"]')).filter(Boolean)")


def kernel_rows_state(b):
    """The kernel table as shown: names, count values, and the count header's aria-sort."""
    return b.evaluate("(() => ({"
                      f"names: {table_column('table.kernel-table', 'name')}.map(td => td.textContent),"
                      f"counts: {table_column('table.kernel-table', 'count')}.map(td => Number(td.dataset.value)),"
                      "sort: document.querySelector('table.kernel-table th[data-key=\"count\"]')?.getAttribute('aria-sort'),"
                      "search: location.search}))()")


def check_sorted(values, direction, context):
    expected = sorted(values, reverse=(direction == "desc"))
    if values != expected:
        raise CheckFailed(f"{context}: kernel counts are not sorted {direction}: {values[:10]}…")


def check_profile_page(b, args):
    pid = args.profile_id
    b.navigate(f"/profiles/{urllib.parse.quote(pid, safe='')}")
    b.wait_for("!!document.querySelector('table.kernel-table tbody tr td[data-key=\"name\"]')",
               "the kernel table", timeout=30)
    # Time from navigation start until the kernel table was seen (an upper bound: the wait
    # polls), for bench/README.md's "first render" figure; never asserted.
    first_render_ms = b.evaluate("performance.now()")
    print(f"info first render of /profiles/{pid} (kernel table shown): {first_render_ms:.0f} ms after navigation start")
    if args.expect_kernel:
        names = b.evaluate(f"{table_column('table.kernel-table', 'name')}.map(td => td.textContent)")
        if args.expect_kernel not in names:
            raise CheckFailed(f"(a) kernel table lacks {args.expect_kernel!r}; first rows: {names[:3]}")
    shares = b.wait_for("[...document.querySelectorAll('.device-busy-share')].map(e => e.textContent)",
                        "a .device-busy-share element")
    if args.expect_busy_pct and not any(args.expect_busy_pct in s for s in shares):
        raise CheckFailed(f"(a) no .device-busy-share shows {args.expect_busy_pct}: {shares}")
    if not any("%" in s for s in shares):
        raise CheckFailed(f"(a) .device-busy-share shows no percentage: {shares}")
    b.wait_for(NO_ERROR_BANNER, "no error banner")
    shot = b.screenshot("profile")
    b.assert_clean("(a) profile page")
    print(f"ok   (a) profile page shows the kernel table{' with ' + repr(args.expect_kernel[:60]) if args.expect_kernel else ''}"
          f" and {', '.join(shares)} ({shot})")

    b.click("table.kernel-table th[data-key='count']")
    search = b.wait_for("location.search.includes('sort=count') && location.search", "sort=count in the URL")
    before = kernel_rows_state(b)
    direction = urllib.parse.parse_qs(search.lstrip("?")).get("dir", ["desc"])[0]
    check_sorted(before["counts"], direction, "(a) after clicking count")
    b.reload()
    b.wait_for("!!document.querySelector('table.kernel-table tbody tr td[data-key=\"count\"]')",
               "the kernel table after reload", timeout=30)
    after = kernel_rows_state(b)
    if after["search"] != before["search"]:
        raise CheckFailed(f"(a) reload changed the URL: {before['search']} → {after['search']}")
    check_sorted(after["counts"], direction, "(a) after reload")
    expected_aria = "ascending" if direction == "asc" else "descending"
    if after["sort"] != expected_aria or after["names"][:20] != before["names"][:20]:
        raise CheckFailed(f"(a) reload did not keep the sort (count header aria-sort={after['sort']}, "
                          f"first row {after['names'][:1]} vs {before['names'][:1]})")
    b.assert_clean("(a) sorting")
    print(f"ok   (a) sorting by count goes into the URL ({search}) and survives a reload")


def check_profiles_list(b, args):
    pid = args.profile_id
    href = f"/profiles/{urllib.parse.quote(pid, safe='')}"
    b.navigate("/profiles")
    link = f"[...document.querySelectorAll('a.profile-link')].find(a => a.getAttribute('href') === {json.dumps(href)})"
    b.wait_for(f"!!{link}", f"a link to {href} in the profiles list", timeout=30)
    b.wait_for(NO_ERROR_BANNER, "no error banner")
    shot = b.screenshot("profiles")
    b.evaluate(f"window.__fleetprofCheck = 1; {link}.click(); true")
    b.wait_for(f"location.pathname === {json.dumps(href)} && document.querySelector('#profile-id')?.textContent === {json.dumps(pid)}",
               "the profile page after clicking its link", timeout=30)
    if not b.evaluate("window.__fleetprofCheck === 1"):
        raise CheckFailed("(b) following the profile link reloaded the page (expected pushState routing)")
    b.assert_clean("(b) profiles list")
    print(f"ok   (b) profiles list shows {pid} and its link opens the profile in place ({shot})")


def check_fleet(b, args):
    b.navigate("/fleet")
    b.wait_for("!document.querySelector('#main .loading') && "
               "!!(document.querySelector('.agents-table') || document.querySelector('#main .empty'))",
               "the fleet page to load", timeout=30)
    if args.expect_agent:
        b.wait_for(f"[...document.querySelectorAll('tr.agent-row')].some(tr => tr.dataset.node === {json.dumps(args.expect_agent)})",
                   f"an agent row for {args.expect_agent}", timeout=30)
    b.wait_for(NO_ERROR_BANNER, "no error banner")
    polls = lambda: sum(1 for u in b.requests if urllib.parse.urlsplit(u).path == "/api/v1/agents")
    first = polls()
    b.cdp.pump(4.5)
    if polls() < first + 1:
        raise CheckFailed("(c) the fleet page did not refresh the agents within 4.5 s")
    rows = b.evaluate("document.querySelectorAll('tr.agent-row').length")
    shot = b.screenshot("fleet")
    b.assert_clean("(c) fleet page")
    print(f"ok   (c) fleet page shows {rows} agent row(s){' including ' + args.expect_agent if args.expect_agent else ''} "
          f"and refreshes ({shot})")


def check_fleet_accounting(b, args):
    b.navigate("/fleet")
    rows = ("(by) => [...document.querySelectorAll(`.fleet-top[data-by='${by}'] tr.fleet-top-row`)]"
            ".map(tr => ({name: tr.dataset.name, cells: [...tr.cells].map(td => td.textContent)}))")
    b.wait_for(f"({rows})('kernel').length > 0 && ({rows})('job').length > 0",
               "the fleet page's top kernels and jobs", timeout=30)
    kernels = b.evaluate(f"({rows})('kernel')")
    jobs = b.evaluate(f"({rows})('job')")
    if args.expect_fleet_kernel not in [r["name"] for r in kernels]:
        raise CheckFailed(f"(i) top kernels lack {args.expect_fleet_kernel!r}: {[r['name'] for r in kernels][:5]}")
    if args.expect_fleet_job and args.expect_fleet_job not in [r["name"] for r in jobs]:
        raise CheckFailed(f"(i) top jobs lack {args.expect_fleet_job!r}: {[r['name'] for r in jobs]}")
    for r in kernels + jobs:
        # name, device-time, 95% interval (low – high), share, samples
        if "–" not in r["cells"][2] or "%" not in r["cells"][3] or not r["cells"][4].strip():
            raise CheckFailed(f"(i) a fleet row lacks its interval, share or samples: {r}")
    idle = b.evaluate("document.querySelector('.fleet-totals .fleet-idle')?.textContent || ''")
    if "%" not in idle:
        raise CheckFailed(f"(i) the idle total shows no share: {idle!r}")
    sampling = b.evaluate("document.querySelector('.fleet-sampling')?.textContent || ''")
    if not sampling.startswith("Sampling"):
        raise CheckFailed(f"(i) no sampling status on the fleet page: {sampling!r}")
    b.wait_for(NO_ERROR_BANNER, "no error banner")
    shot = b.screenshot("fleet-accounting")
    b.assert_clean("(i) fleet accounting")
    print(f"ok   (i) fleet page shows {len(kernels)} top kernels including {args.expect_fleet_kernel[:40]!r}, "
          f"{len(jobs)} jobs, idle {idle}, {sampling[:40]!r}… ({shot})")


CAPTURE_STATE = ("(() => { const view = document.querySelector('.capture-view'); if (!view) return null;"
                 " return {id: view.dataset.captureId, state: view.dataset.state,"
                 " error: view.querySelector('.capture-error')?.textContent || '',"
                 " targets: [...document.querySelectorAll('.capture-target')].map(tr => ({"
                 "   node: tr.dataset.node, target: tr.dataset.target,"
                 "   state: tr.querySelector('.target-state')?.textContent || '',"
                 "   error: tr.querySelector('.target-error')?.textContent || '',"
                 "   link: tr.querySelector('a[href^=\"/profiles/\"]')?.getAttribute('href') || ''}))}; })()")


def wait_capture_indexed(b, timeout):
    deadline = time.monotonic() + timeout
    while True:
        c = b.evaluate(CAPTURE_STATE)
        if c:
            failed = [t for t in c["targets"] if t["state"] == "FAILED"]
            if failed:
                raise CheckFailed("(d) capture target failed: " +
                                  "; ".join(f"{t['node']} {t['target']}: {t['error']}" for t in failed))
            if c["state"] not in ("RUNNING", "") and not c["targets"]:
                raise CheckFailed(f"(d) capture {c['id']} is {c['state']} without targets: {c['error']}")
            if c["targets"] and all(t["state"] == "INDEXED" for t in c["targets"]):
                return c
        if time.monotonic() > deadline:
            raise CheckFailed(f"(d) capture did not reach INDEXED on every target within {timeout} s: {c}")
        b.cdp.pump(0.25)
        if b.errors:
            b.assert_clean("(d) capture")


def check_capture(b, args):
    b.navigate("/captures")
    b.wait_for("!!document.querySelector('#capture-job')", "the capture form")
    b.set_value("#capture-job", args.capture_job)
    if args.capture_node:
        b.set_value("#capture-node", args.capture_node)
    if args.capture_duration_ms:
        b.set_value("#capture-duration", str(args.capture_duration_ms))
    b.click("#capture-submit")
    b.wait_for("!!(document.querySelector('.capture-view') || document.querySelector('#banner.error'))",
               "the started capture", timeout=30)
    b.wait_for(NO_ERROR_BANNER, "no error banner after starting the capture", timeout=1)
    capture = wait_capture_indexed(b, 120)
    shot = b.screenshot("capture")
    missing = [t for t in capture["targets"] if not t["link"]]
    if missing:
        raise CheckFailed(f"(d) indexed targets without a profile link: {missing}")
    if f"capture={capture['id']}" not in b.evaluate("location.search"):
        raise CheckFailed(f"(d) the URL does not name capture {capture['id']}")
    b.reload()
    b.wait_for(f"document.querySelector('.capture-view')?.dataset.captureId === {json.dumps(capture['id'])}",
               "the capture after reloading its deep link", timeout=30)
    again = wait_capture_indexed(b, 30)
    link = again["targets"][0]["link"]
    b.click(f".capture-target a[href={json.dumps(link)}]")
    pid = urllib.parse.unquote(link.rsplit("/", 1)[1])
    b.wait_for(f"document.querySelector('#profile-id')?.textContent === {json.dumps(pid)}",
               "the captured profile's page", timeout=30)
    b.wait_for(NO_ERROR_BANNER, "no error banner on the captured profile")
    b.assert_clean("(d) capture")
    print(f"ok   (d) capture {capture['id']}: {len(capture['targets'])} target(s) INDEXED, linked "
          f"({', '.join(t['link'] for t in capture['targets'])}) ({shot})")


def check_error_banner(b, args):
    bad_id = "fleetprof-browser-check-no-such-profile"
    b.allowed_error = lambda e: e["kind"] == "log" and e.get("source") == "network" and bad_id in e.get("url", "")
    try:
        b.navigate(f"/profiles/{bad_id}")
        text = b.wait_for("document.querySelector('#banner.error')?.textContent", "the error banner", timeout=30)
        b.assert_clean("(e) unknown profile")
    finally:
        b.allowed_error = None
    if "NOT_FOUND" not in text and "404" not in text:
        raise CheckFailed(f"(e) the banner does not say NOT_FOUND: {text!r}")
    shot = b.screenshot("not_found")
    print(f"ok   (e) an unknown profile shows the banner: {text.strip()[:100]!r} ({shot})")


def check_token_prompt(b, args):
    """With tokens on, the first API answer is a 401: the app asks for a token, keeps it for
    the tab, and the page loads with it; a wrong one is asked for again."""
    b.allowed_error = lambda e: e["kind"] == "log" and "401" in e.get("text", "")
    try:
        b.navigate("/profiles")
        text = b.wait_for("document.querySelector('#auth:not(.hidden)')?.textContent", "the token prompt", timeout=30)
        if "needs a token" not in text:
            raise CheckFailed(f"(t) the prompt does not say a token is needed: {text!r}")
        shot = b.screenshot("token_prompt")
        b.set_value("#token-input", "wrong-token")
        b.click("#token-submit")
        again = b.wait_for("document.querySelector('#auth:not(.hidden)')?.textContent", "the prompt again", timeout=30)
        if "not known" not in again:
            raise CheckFailed(f"(t) a wrong token is not explained: {again!r}")
        b.screenshot("token_wrong")
        b.set_value("#token-input", args.token)
        b.click("#token-submit")
        b.wait_for("!!document.querySelector('a.profile-link')", "the profiles list with the token", timeout=30)
        b.wait_for("document.querySelector('#auth').classList.contains('hidden')", "the prompt to go away")
        if b.evaluate("sessionStorage.getItem('fleetprofToken')") != args.token:
            raise CheckFailed("(t) the token is not kept in sessionStorage")
        b.wait_for("document.querySelector('#token-indicator')?.textContent.includes('token set')", "the token note")
        b.assert_clean("(t) token prompt")
    finally:
        b.allowed_error = None
    print(f"ok   (t) the app asked for a token, refused a wrong one, and loaded with the right one ({shot})")


def mouse(b, kind, x, y, modifiers=0):
    b.call("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1,
                                         "modifiers": modifiers})


def press_key(b, key):
    code = "Digit0" if key == "0" else f"Key{key.upper()}"
    for kind in ("keyDown", "keyUp"):
        b.call("Input.dispatchKeyEvent", {"type": kind, "key": key, "code": code, "text": key if kind == "keyDown" else "",
                                          "windowsVirtualKeyCode": ord(key.upper())})


def check_findings(b, args):
    """The profile page's findings: the expected rule is listed with its evidence, and an evidence
    link opens the trace viewer on that time range."""
    pid = urllib.parse.quote(args.findings_profile or args.profile_id, safe='')
    b.navigate(f"/profiles/{pid}")
    card = f"document.querySelector('.finding[data-rule={json.dumps(args.expect_finding)}]')"
    b.wait_for(f"!!{card}", f"the {args.expect_finding} finding", timeout=30)
    rules = b.evaluate("[...document.querySelectorAll('.finding')].map(f => f.dataset.rule)")
    b.evaluate(f"{card}.scrollIntoView(); true")
    shot = b.screenshot("findings")
    href = b.evaluate(f"{card}.querySelector('a.evidence-link')?.getAttribute('href') || ''")
    if not href.startswith(f"/profiles/{pid}/trace?start_ns="):
        raise CheckFailed(f"(f) the {args.expect_finding} finding has no evidence link into the trace viewer: {href!r}")
    b.evaluate(f"{card}.querySelector('a.evidence-link').click(); true")
    viewer = "document.querySelector('.trace-viewer')"
    b.wait_for(f"location.pathname.endsWith('/trace') && Number({viewer}?.dataset.loaded || 0) >= 1",
               "the trace viewer opened from the evidence link", timeout=30)
    q = urllib.parse.parse_qs(urllib.parse.urlsplit(href).query)
    want = int(q["end_ns"][0]) - int(q["start_ns"][0])
    span = b.evaluate(f"{viewer}.viewSpanNs()")
    if abs(span - want) > max(2, want // 1000):
        raise CheckFailed(f"(f) the viewer shows {span} ns, the evidence link asked for {want} ns")
    b.screenshot("findings_trace")
    b.assert_clean("(f) findings")
    print(f"ok   (f) findings {rules} on the profile page; evidence opens the viewer on {want} ns ({shot})")


def check_compare(b, args):
    """The compare page: rows with one bar per profile, status filters in the URL."""
    ids = [args.profile_id, args.compare_with]
    b.navigate(f"/compare?profile={urllib.parse.quote(ids[0])}&profile={urllib.parse.quote(ids[1])}&by=kernel")
    b.wait_for("document.querySelectorAll('tr.compare-row').length > 0", "the compare rows", timeout=30)
    rows = b.evaluate("document.querySelectorAll('tr.compare-row').length")
    bars = b.evaluate("document.querySelector('tr.compare-row').querySelectorAll('.compare-bar-line').length")
    if bars != 2:
        raise CheckFailed(f"(g) a compare row shows {bars} bars, want one per profile (2)")
    shot = b.screenshot("compare")
    b.evaluate("document.querySelector('input[data-status=\"same\"]').click(); true")
    b.wait_for("location.search.includes('status=') && document.querySelectorAll('tr.compare-row.status-same').length === 0",
               "the same rows hidden and the filter in the URL", timeout=15)
    b.assert_clean("(g) compare")
    print(f"ok   (g) compare page: {rows} kernel rows, a bar per profile, status filter kept in the URL ({shot})")


def check_job(b, args):
    """The job page: series, ranks, findings and the summed tables."""
    b.navigate(f"/jobs/{urllib.parse.quote(args.job, safe='')}")
    b.wait_for("document.querySelectorAll('.rank-row').length > 0 && document.querySelectorAll('.series-dot').length > 0"
               " && !!document.querySelector('table.job-kernels tbody tr')", "the job page", timeout=30)
    ranks = b.evaluate("document.querySelectorAll('.rank-row').length")
    b.wait_for("!document.querySelector('.findings') || true", "job findings")
    shot = b.screenshot("job")
    b.assert_clean("(h) job page")
    print(f"ok   (h) job page {args.job}: {ranks} ranks, series, findings and summed kernels ({shot})")


def check_trace_viewer(b, args):
    """The timeline of the profile: loads, zooms with the keyboard, shows a kernel's details when
    clicked, jumps to its launch, adds up a Shift+drag selection and hands a window to Perfetto."""
    b.call("Emulation.setDeviceMetricsOverride", {"width": 1400, "height": 1000, "deviceScaleFactor": 1, "mobile": False})
    b.navigate(f"/profiles/{args.profile_id}/trace")
    viewer = "document.querySelector('.trace-viewer')"
    b.wait_for(f"Number({viewer}?.dataset.loaded || 0) >= 1", "the first trace view", timeout=30)
    first_ms = b.evaluate(f"Number({viewer}.dataset.firstViewMs)")
    print(f"ok   trace viewer: first view drawn {first_ms} ms after navigation")
    b.screenshot("trace_initial")
    span0 = b.evaluate(f"{viewer}.viewSpanNs()")
    loaded = b.evaluate(f"Number({viewer}.dataset.loaded)")
    canvas = b.evaluate("(() => { const r = document.querySelector('.trace-canvas').getBoundingClientRect();"
                        " return {x: r.left + r.width * 0.6, y: r.top + 40}; })()")
    mouse(b, "mouseMoved", canvas["x"], canvas["y"])
    b.evaluate("document.querySelector('.trace-canvas').focus()")
    for _ in range(12):
        press_key(b, "w")
    b.wait_for(f"Number({viewer}.dataset.loaded) > {loaded} && {viewer}.viewSpanNs() < {span0} / 8",
               "W to zoom in and the zoomed window to load", timeout=20)
    press_key(b, "a")
    b.cdp.pump(0.5)
    print(f"ok   trace viewer: W zoomed from {span0} ns to {b.evaluate(viewer + '.viewSpanNs()'):.0f} ns")
    b.screenshot("trace_zoomed")
    # Zoom until a kernel is wide enough to click, then click it.
    kernel = None
    for _ in range(40):
        boxes = [k for k in (b.evaluate(f"{viewer}.visibleEventBoxes('device')") or [])
                 if k.get("correlation") is not None]
        if boxes:
            kernel = max(boxes, key=lambda k: k["width"])
            if kernel["width"] >= 8:
                break
        press_key(b, "w")
        b.cdp.pump(0.3)
    if not kernel:
        raise CheckFailed("no kernel became wide enough to click in the trace viewer")
    b.evaluate("window.scrollTo(0, 0)")
    kernel = max([k for k in b.evaluate(f"{viewer}.visibleEventBoxes('device')") if k.get("correlation") is not None],
                 key=lambda k: k["width"])
    mouse(b, "mouseMoved", kernel["x"], kernel["y"])
    mouse(b, "mousePressed", kernel["x"], kernel["y"])
    mouse(b, "mouseReleased", kernel["x"], kernel["y"])
    shown = b.wait_for("document.querySelector('.trace-details .trace-event-name')?.textContent",
                       "the clicked kernel's details")
    if shown != kernel["name"]:
        raise CheckFailed(f"details show {shown!r}, clicked {kernel['name']!r}")
    b.wait_for("!!document.querySelector('.trace-details .trace-event-cat')", "the kernel's category")
    b.wait_for("!!document.querySelector('.trace-details .trace-jump')", "a link to the kernel's launch")
    print(f"ok   trace viewer: clicked kernel {kernel['name'][:60]!r} shows its details")
    b.screenshot("trace_kernel_details")
    b.click(".trace-details .trace-jump")
    b.wait_for("(document.querySelector('.trace-details dd:nth-of-type(2)')?.textContent || '').startsWith('host')",
               "the launching runtime call to be selected", timeout=20)
    b.screenshot("trace_launch_details")
    # Shift+drag across the view: the selection's kernels add up.
    r = b.evaluate("(() => { const r = document.querySelector('.trace-canvas').getBoundingClientRect();"
                   " return {x0: r.left + 260, x1: r.right - 40, y: r.top + 60}; })()")
    b.evaluate("document.querySelector('.trace-canvas').focus()")
    press_key(b, "0")
    b.cdp.pump(0.5)
    mouse(b, "mousePressed", r["x0"], r["y"], modifiers=8)
    mouse(b, "mouseMoved", (r["x0"] + r["x1"]) / 2, r["y"], modifiers=8)
    mouse(b, "mouseMoved", r["x1"], r["y"], modifiers=8)
    mouse(b, "mouseReleased", r["x1"], r["y"], modifiers=8)
    rows = b.wait_for("document.querySelectorAll('.trace-range .trace-range-table tbody tr').length",
                      "the selection's breakdown")
    print(f"ok   trace viewer: a Shift+drag selection lists {rows} rows")
    b.screenshot("trace_selection")
    # Open in Perfetto, with Perfetto's side of the postMessage protocol played by the page.
    b.evaluate("""(() => {
      window.__perfetto = [];
      window.open = () => ({postMessage(message, origin) {
        window.__perfetto.push({message, origin});
        if (message === 'PING') setTimeout(() => window.dispatchEvent(
            new MessageEvent('message', {data: 'PONG', origin: 'https://ui.perfetto.dev'})), 10);
      }});
      return true; })()""")
    b.click(".trace-toolbar .trace-perfetto")
    size = b.wait_for("(() => { const m = window.__perfetto.find(m => m.message && m.message.perfetto);"
                      " return m && m.origin === 'https://ui.perfetto.dev' ? m.message.perfetto.buffer.byteLength : 0; })()",
                      "the trace to be posted to Perfetto")
    events = b.evaluate("(() => { const m = window.__perfetto.find(m => m.message && m.message.perfetto);"
                        " return JSON.parse(new TextDecoder().decode(m.message.perfetto.buffer)).traceEvents.length; })()")
    if not events:
        raise CheckFailed("the trace posted to Perfetto has no events")
    print(f"ok   trace viewer: Open in Perfetto posted {size} bytes ({events} events) after PING/PONG")
    b.assert_clean("trace viewer")


def flame_card(b, index=0):
    return f"document.querySelectorAll('.flame-card')[{index}]"


def check_flame(b, args):
    """Flame graphs: the profile's (zoom on click, search, hover with exact values, another
    value), the job's, and the compare page's diff coloured by change."""
    b.call("Emulation.setDeviceMetricsOverride", {"width": 1400, "height": 1000, "deviceScaleFactor": 1, "mobile": False})
    b.navigate(f"/profiles/{args.profile_id}")
    card = flame_card(b)
    b.wait_for(f"Number({card}?.dataset.loaded || 0) >= 1", "the profile's flame graph", timeout=30)
    b.evaluate(f"{card}.scrollIntoView({{block: 'center'}}); true")
    boxes = b.evaluate(f"{card}.flameBoxes()")
    if len(boxes) < 3 or boxes[0]["level"] != 0:
        raise CheckFailed(f"(k) the flame graph draws {len(boxes)} frames")
    total = b.evaluate(f"{card}.flameState().total")
    shot = b.screenshot("flame_profile", ".flame-card")
    # Hover the widest frame below the root: the tooltip has its exact value and share.
    target = max([x for x in boxes if x["level"] == 1], key=lambda x: x["width"])
    mouse(b, "mouseMoved", target["x"], target["y"])
    tip = b.wait_for(f"{card}.flameState().tooltip", "the frame's tooltip")
    if f"{target['total']:,}".replace(",", "") not in tip.replace(",", "").replace(" ", "").replace(" ", ""):
        raise CheckFailed(f"(k) the tooltip {tip!r} lacks the exact value {target['total']}")
    # Click it: the view zooms into that frame.
    mouse(b, "mousePressed", target["x"], target["y"])
    mouse(b, "mouseReleased", target["x"], target["y"])
    b.wait_for(f"{card}.flameState().zoom === {json.dumps(target['name'])}", "the zoom into the clicked frame")
    shot_zoom = b.screenshot("flame_zoomed", ".flame-card")
    # Search: the frames matching a kernel's name add up to a share.
    leaf = max([x for x in boxes if x["level"] >= 2], key=lambda x: x["total"], default=target)
    needle = leaf["name"][:12]
    b.evaluate(f"(() => {{ const s = {card}.querySelector('.flame-search'); s.value = {json.dumps(needle)};"
               " s.dispatchEvent(new Event('input')); return true; })()")
    matched = b.wait_for(f"{card}.flameState().matched", "the search to highlight frames")
    b.screenshot("flame_search", ".flame-card")
    # Another value: host self time.
    loaded = b.evaluate(f"Number({card}.dataset.loaded)")
    b.evaluate(f"(() => {{ const s = {card}.querySelector('.flame-value'); s.value = 'host_self_ns';"
               " s.dispatchEvent(new Event('change')); return true; })()")
    b.wait_for(f"Number({card}.dataset.loaded) > {loaded} && {card}.flameState().value === 'host_self_ns'",
               "the host self time flame graph")
    b.assert_clean("(k) flame graph")
    print(f"ok   (k) profile flame graph: {len(boxes)} frames of {total} ns, hover {tip[:70]!r}, zoom into "
          f"{target['name'][:40]!r}, search {needle!r} matched {matched} ({shot}, {shot_zoom})")
    if args.job:
        b.navigate(f"/jobs/{urllib.parse.quote(args.job, safe='')}")
        b.wait_for(f"Number({flame_card(b)}?.dataset.loaded || 0) >= 1", "the job's flame graph", timeout=30)
        b.evaluate(f"{flame_card(b)}.scrollIntoView(); true")
        frames = len(b.evaluate(f"{flame_card(b)}.flameBoxes()"))
        shot = b.screenshot("flame_job", ".flame-card")
        b.assert_clean("(k) job flame graph")
        print(f"ok   (k) job flame graph: {frames} frames ({shot})")
    if args.compare_with:
        ids = [args.profile_id, args.compare_with]
        b.navigate(f"/compare?profile={urllib.parse.quote(ids[0])}&profile={urllib.parse.quote(ids[1])}")
        b.wait_for(f"Number({flame_card(b)}?.dataset.loaded || 0) >= 1", "the diff flame graph", timeout=30)
        b.evaluate(f"{flame_card(b)}.scrollIntoView(); true")
        diff = b.evaluate(f"{flame_card(b)}.flameBoxes()")
        if not diff or any("base" not in x for x in diff):
            raise CheckFailed("(k) the diff flame graph has no frames with a baseline value")
        changed = sum(1 for x in diff if x["base"] != x["total"])
        shot = b.screenshot("flame_diff", ".flame-card")
        b.assert_clean("(k) diff flame graph")
        print(f"ok   (k) diff flame graph: {len(diff)} frames, {changed} changed against the baseline ({shot})")


def check_job_trace(b, args):
    """A capture's ranks in one viewer: a heading per rank, a collective clicked on one rank
    highlighted on every rank with each rank's wait, a rank folded by clicking its heading."""
    b.call("Emulation.setDeviceMetricsOverride", {"width": 1400, "height": 1000, "deviceScaleFactor": 1, "mobile": False})
    b.navigate(f"/jobs/{args.job_trace}/trace?capture={args.job_trace_capture}")
    viewer = "document.querySelector('.trace-viewer')"
    b.wait_for(f"Number({viewer}?.dataset.loaded || 0) >= 1", "the job's first trace view", timeout=30)
    headings = b.evaluate(f"{viewer}.rankHeadings()")
    ranks = [h["rank"] for h in headings]
    if len(ranks) != args.job_trace_ranks or ranks != sorted(ranks, key=int):
        raise CheckFailed(f"(j) expected {args.job_trace_ranks} rank headings in rank order, saw {ranks}")
    print(f"ok   (j) job trace: {len(ranks)} ranks grouped under headings, in rank order")
    b.screenshot("job_trace_initial")
    # Zoom in until a collective (the NCCL stream) is wide enough to click, then click it.
    b.evaluate("document.querySelector('.trace-canvas').focus()")
    canvas = b.evaluate("(() => { const r = document.querySelector('.trace-canvas').getBoundingClientRect();"
                        " return {x: r.left + r.width * 0.5, y: r.top + 40}; })()")
    mouse(b, "mouseMoved", canvas["x"], canvas["y"])
    target = None
    for _ in range(40):
        boxes = [k for k in (b.evaluate(f"{viewer}.visibleEventBoxes('device')") or []) if "nccl" in k["name"].lower()]
        if boxes:
            target = max(boxes, key=lambda k: k["width"])
            if target["width"] >= 10:
                break
        press_key(b, "w")
        b.cdp.pump(0.3)
    if not target:
        raise CheckFailed("(j) no collective became wide enough to click in the job trace")
    b.evaluate("window.scrollTo(0, 0)")
    boxes = [k for k in b.evaluate(f"{viewer}.visibleEventBoxes('device')") if "nccl" in k["name"].lower()]
    target = max(boxes, key=lambda k: k["width"])
    mouse(b, "mouseMoved", target["x"], target["y"])
    mouse(b, "mousePressed", target["x"], target["y"])
    mouse(b, "mouseReleased", target["x"], target["y"])
    rows = b.wait_for("document.querySelectorAll('.trace-collective-table tbody tr').length",
                      "the clicked collective's instance on every rank", timeout=20)
    lit = b.evaluate(f"{viewer}.highlighted().length")
    if rows != args.job_trace_ranks or lit != args.job_trace_ranks:
        raise CheckFailed(f"(j) the collective shows {rows} ranks and highlights {lit}, expected {args.job_trace_ranks}")
    late = b.evaluate("document.querySelector('.trace-collective .explain')?.textContent || ''")
    print(f"ok   (j) job trace: collective on rank {target['rank']} highlighted on {lit} ranks; {late}")
    b.screenshot("job_trace_collective")
    # Fold the first rank: its tracks leave the view.
    heading = b.evaluate(f"{viewer}.rankHeadings()")[0]
    mouse(b, "mousePressed", heading["x"], heading["y"])
    mouse(b, "mouseReleased", heading["x"], heading["y"])
    b.cdp.pump(0.3)
    shown = {k["rank"] for k in b.evaluate(f"{viewer}.visibleEventBoxes()")}
    if heading["rank"] in shown:
        raise CheckFailed(f"(j) rank {heading['rank']} still draws events after folding it")
    print(f"ok   (j) job trace: rank {heading['rank']} folded by clicking its heading")
    b.screenshot("job_trace_folded")
    b.assert_clean("job trace")


def main():
    parser = argparse.ArgumentParser(description="Checks fleetprof's web app in headless Chromium.")
    parser.add_argument("--url", required=True, help="the server's HTTP address, e.g. http://127.0.0.1:7071")
    parser.add_argument("--profile-id", required=True)
    parser.add_argument("--screenshots", required=True, help="folder for the PNG screenshots")
    parser.add_argument("--expect-kernel", default="", help="a kernel name the kernel table must show")
    parser.add_argument("--expect-busy-pct", default="", help='text such as "98.4%%" a .device-busy-share must contain')
    parser.add_argument("--expect-agent", default="", help="a node the fleet page must list")
    parser.add_argument("--capture-job", default="", help="capture this job from the captures page")
    parser.add_argument("--capture-node", default="")
    parser.add_argument("--capture-duration-ms", type=int, default=0)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--trace-viewer", action="store_true",
                        help="also check the trace viewer (needs a profile with kernels and their launches)")
    parser.add_argument("--expect-finding", default="", help="a diagnosis rule the profile page must list")
    parser.add_argument("--findings-profile", default="", help="the profile for --expect-finding (default --profile-id)")
    parser.add_argument("--compare-with", default="", help="a second profile: check the compare page")
    parser.add_argument("--job", default="", help="check this job's page")
    parser.add_argument("--flame", action="store_true", help="check the flame graphs (profile, --job, --compare-with)")
    parser.add_argument("--job-trace", default="", help="check this job's trace viewer for --job-trace-capture")
    parser.add_argument("--job-trace-capture", default="")
    parser.add_argument("--job-trace-ranks", type=int, default=0)
    parser.add_argument("--token", default="", help="the server wants this token: check the prompt, then use it")
    parser.add_argument("--expect-fleet-kernel", default="", help="a kernel the fleet page's top kernels must show")
    parser.add_argument("--expect-fleet-job", default="", help="a job the fleet page's top jobs must show")
    args = parser.parse_args()
    os.makedirs(args.screenshots, exist_ok=True)
    if not os.path.exists(args.chromium):
        print(f"FAIL chromium not found at {args.chromium}", file=sys.stderr)
        return 2

    browser = None
    try:
        browser = Browser(args.chromium, args.url, args.screenshots)
        checks = [check_profile_page, check_profiles_list, check_fleet]
        if args.trace_viewer:
            checks.append(check_trace_viewer)
        if args.expect_finding:
            checks.append(check_findings)
        if args.compare_with:
            checks.append(check_compare)
        if args.job:
            checks.append(check_job)
        if args.job_trace:
            checks.append(check_job_trace)
        if args.flame:
            checks.append(check_flame)
        if args.expect_fleet_kernel:
            checks.append(check_fleet_accounting)
        if args.token:
            checks.insert(0, check_token_prompt)
        if args.capture_job:
            checks.append(check_capture)
        checks.append(check_error_banner)
        for check in checks:
            check(browser, args)
        browser.assert_clean("end of the run")
        foreign = [u for u in browser.requests if not browser._same_host(u)]
        if foreign:
            raise CheckFailed(f"requests left the server: {foreign[:5]}")
        print(f"ok   all {len(checks)} checks passed; {len(browser.requests)} requests, all to {browser.server.netloc}")
        return 0
    except (CheckFailed, TimeoutError, ConnectionError, OSError) as e:
        print(f"FAIL {e}", file=sys.stderr)
        if browser:
            try:
                print(f"     failure screenshot: {browser.screenshot('failure')}", file=sys.stderr)
            except Exception:
                pass
        return 1
    finally:
        if browser:
            for path in browser.screenshots:
                print(f"screenshot {path}")
            browser.close()


if __name__ == "__main__":
    sys.exit(main())
