"""One profile as `Client.profile()` answers it; in a notebook it shows itself as the web app's
profile page does: job, span, a busy bar per device and the top kernels, with links."""

import html

from .frames import table


def human_ns(ns):
    """1234567 -> '1.23 ms' (as the web app's tables print times)."""
    for unit, size in (("s", 10 ** 9), ("ms", 10 ** 6), ("µs", 10 ** 3)):
        if abs(ns) >= size:
            return "%.3g %s" % (ns / size, unit)
    return "%d ns" % ns


class Profile:
    """`info` (the profile record: job, node, format, labels, start/end…), `summary` (what the
    analysis computed) and `raw` (the whole answer, = `fleetprof profile ID --json`); `devices`,
    `kernels`, `ops`, `steps` are the summary's tables; `url` its page in the web app."""

    def __init__(self, raw, base_url):
        self.raw = raw
        self.info = raw.get("profile", {})
        self.summary = raw.get("summary", {})
        self._base_url = base_url

    @property
    def id(self):
        return self.info.get("profile_id", "")

    @property
    def job(self):
        return self.info.get("job", "")

    @property
    def url(self):
        return "%s/profiles/%s" % (self._base_url, self.id)

    @property
    def span_ns(self):
        return self.info.get("end_ns", 0) - self.info.get("start_ns", 0)

    @property
    def devices(self):
        return table(self.summary.get("devices", []))

    @property
    def kernels(self):
        return table(self.summary.get("kernels", []))

    @property
    def ops(self):
        return table(self.summary.get("ops", []))

    @property
    def steps(self):
        return table(self.summary.get("steps", []))

    def __repr__(self):
        return "<fleetprof.Profile %s job=%s %s, %d devices, %d kernels>" % (
            self.id, self.job, human_ns(self.span_ns), len(self.summary.get("devices", [])),
            len(self.summary.get("kernels", [])))

    def _repr_html_(self, top=10):
        e = html.escape
        info = self.info
        head = ("<div class='fleetprof-profile'><h4 style='margin:0'>%s <small>job <b>%s</b> · node %s · %s · "
                "span %s</small></h4><div><a href='%s' target='_blank'>profile page</a> · "
                "<a href='%s/trace' target='_blank'>trace view</a> · "
                "<a href='%s/jobs/%s' target='_blank'>job page</a></div>" % (
                    e(self.id), e(self.job), e(info.get("node", "")), e(info.get("format", "")),
                    e(human_ns(self.span_ns)), e(self.url), e(self.url), e(self._base_url), e(self.job)))
        bars = []
        for d in self.summary.get("devices", []):
            span = d.get("span_ns", 0) or 1
            parts = [("compute", "#3a7bd5"), ("communication", "#e58e26"), ("memory", "#8e44ad")]
            cells = "".join("<div title='%s %s' style='width:%.2f%%;background:%s'></div>" % (
                name, e(human_ns(d.get(name + "_ns", 0))), 100.0 * d.get(name + "_ns", 0) / span, color)
                for name, color in parts)
            bars.append("<tr><td>device %s</td><td><div style='display:flex;width:300px;height:12px;"
                        "background:#ddd'>%s</div></td><td>busy %.1f%% of %s</td></tr>" % (
                            e(str(d.get("device", ""))), cells, 100.0 * d.get("busy_ns", 0) / span,
                            e(human_ns(d.get("span_ns", 0)))))
        kernels = sorted(self.summary.get("kernels", []), key=lambda k: -k.get("total_ns", 0))[:top]
        rows = "".join("<tr><td style='text-align:left'>%s</td><td>%s</td><td>%d</td><td title='%d ns'>%s</td></tr>" % (
            e(k.get("name", "")[:120]), e(k.get("kind", "")), k.get("count", 0), k.get("total_ns", 0),
            e(human_ns(k.get("total_ns", 0)))) for k in kernels)
        return (head + "<table>%s</table><table><tr><th style='text-align:left'>top kernels</th><th>kind</th>"
                "<th>count</th><th>total</th></tr>%s</table></div>" % ("".join(bars), rows))
