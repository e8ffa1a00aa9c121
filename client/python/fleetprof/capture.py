"""A capture in progress: follow its targets to INDEXED, with progress in a notebook or a terminal."""

import html
import sys
import time

from . import errors
from .frames import table

FINAL_TARGET_STATES = ("INDEXED", "FAILED")
_STEP = {"PENDING": 0, "RUNNING": 1, "UPLOADING": 2, "INDEXED": 3, "FAILED": 3}


class Capture:
    """What `Client.capture()` returns. `capture_id`, `state` (RUNNING, DONE, PARTIAL, FAILED,
    SKIPPED), `raw` (the capture as the server answered it) and `targets` (a table)."""

    def __init__(self, client, raw):
        self._client = client
        self.raw = raw

    @property
    def capture_id(self):
        return self.raw.get("capture_id", "")

    @property
    def state(self):
        return self.raw.get("state", "")

    @property
    def targets(self):
        return table(self.raw.get("targets", []))

    def refresh(self):
        self.raw = self._client.request("GET", "/api/v1/captures/%s" % self.capture_id)
        return self

    def done(self):
        return self.state not in ("RUNNING", "STATE_UNSPECIFIED", "")

    def wait(self, progress=True, timeout=None, poll_s=0.5):
        """Follows the capture until every target is INDEXED or FAILED and returns the profile
        ids (one per target, in the targets' order). With `progress`, shows each target's state:
        progress bars in Jupyter, one updating line on a terminal. Raises CaptureFailed (with
        each failed target's reason) unless every target reached INDEXED, and Unavailable when
        `timeout` seconds pass first (default: until the server's own per-target deadline)."""
        shown = _progress_display() if progress else None
        started = time.monotonic()
        while True:
            if shown:
                shown.update(self)
            if self.done():
                break
            if timeout is not None and time.monotonic() - started > timeout:
                if shown:
                    shown.close()
                raise errors.Unavailable("capture %s: still %s after %s s" % (self.capture_id, self.state, timeout))
            time.sleep(poll_s)
            self.refresh()
        if shown:
            shown.close()
        targets = self.raw.get("targets", [])
        ids = [t.get("profile_id", "") for t in targets if t.get("state") == "INDEXED"]
        failures = [(t.get("target") or t.get("node", ""), t.get("error") or t.get("state", ""))
                    for t in targets if t.get("state") != "INDEXED"]
        if self.state != "DONE" or failures:
            reasons = "; ".join("%s: %s" % f for f in failures) or self.raw.get("error", "") or self.state
            raise errors.CaptureFailed("capture %s %s: %s" % (self.capture_id, self.state, reasons),
                                       self.raw, ids, failures)
        return ids

    def __repr__(self):
        return "<fleetprof.Capture %s %s, %d targets>" % (self.capture_id, self.state,
                                                           len(self.raw.get("targets", [])))

    def _repr_html_(self):
        return _progress_html(self)


def _target_line(t):
    state = t.get("state", "")
    extra = t.get("error") or t.get("note") or ""
    return "%s %s %s%s" % (t.get("node", ""), t.get("target", ""), state, (" (%s)" % extra) if extra else "")


def _progress_html(capture):
    rows = []
    for t in capture.raw.get("targets", []):
        state = t.get("state", "")
        color = {"INDEXED": "#2a7", "FAILED": "#c33"}.get(state, "#58c")
        rows.append("<tr><td>%s</td><td>%s</td><td><progress value='%d' max='3' style='accent-color:%s'>"
                    "</progress></td><td>%s</td></tr>" % (
                        html.escape(t.get("node", "")), html.escape(t.get("target", "")),
                        _STEP.get(state, 0), color,
                        html.escape(state + ((": " + (t.get("error") or t.get("note"))) if (t.get("error") or t.get("note")) else ""))))
    if not rows:
        rows.append("<tr><td colspan='4'>%s</td></tr>" % html.escape(capture.raw.get("error", "") or "no targets yet"))
    return ("<div><b>capture %s</b> %s<table>%s</table></div>" %
            (html.escape(capture.capture_id), html.escape(capture.state), "".join(rows)))


class _NotebookProgress:
    def __init__(self, display_module):
        self._display = display_module
        self._handle = None

    def update(self, capture):
        shown = self._display.HTML(_progress_html(capture))
        if self._handle is None:
            self._handle = self._display.display(shown, display_id=True)
        else:
            self._handle.update(shown)

    def close(self):
        pass


class _TerminalProgress:
    """One line on stderr, rewritten in place on a terminal; a new line per change elsewhere."""

    def __init__(self, stream):
        self._stream = stream
        self._tty = stream.isatty()
        self._last = ""
        self._width = 0

    def update(self, capture):
        targets = capture.raw.get("targets", [])
        final = sum(1 for t in targets if t.get("state") in FINAL_TARGET_STATES)
        line = "capture %s %s [%d/%d] %s" % (capture.capture_id, capture.state, final, len(targets),
                                             " | ".join(_target_line(t) for t in targets))
        if line == self._last:
            return
        self._last = line
        if self._tty:
            self._stream.write("\r" + line.ljust(self._width))
            self._width = len(line)
        else:
            self._stream.write(line + "\n")
        self._stream.flush()

    def close(self):
        if self._tty and self._last:
            self._stream.write("\n")
            self._stream.flush()


def _progress_display():
    try:
        from IPython import get_ipython
        shell = get_ipython()
        if shell is not None and getattr(shell, "kernel", None) is not None:
            from IPython import display
            return _NotebookProgress(display)
    except ImportError:
        pass
    return _TerminalProgress(sys.stderr)
