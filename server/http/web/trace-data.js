// fleetprof web app — trace viewer, data: asks the server for the window on screen (half a
// view either side, at about one pixel's resolution) and keeps its events per track in
// tv.v.data; skips the request while what it holds still covers the view well enough.

import {api, fmtDuration, fmtInt, num, showError} from './core.js';
import {draw} from './trace-draw.js';
import {TRACE, assignDepths, computeLayout, keyOf, offsetOf, toAbs} from './trace-layout.js';

// The resolution (ns per bin) for the view [s, e] at the canvas's width.
function resolutionFor(tv, s, e) {
  const width = Math.max(200, tv.canvas.clientWidth - TRACE.labelWidth);
  return Math.max(1, Math.floor((e - s) / Math.min(TRACE.maxBins, width)));
}

// Loads the view's window unless held already; true once a new window is laid out and drawn.
// A newer request supersedes an older one still on its way.
export async function fetchView(tv) {
  const {v, job, status, element} = tv;
  const span = v.e - v.s;
  const s = Math.max(-span, v.s - span / 2);
  const e = v.e + span / 2;
  const res = resolutionFor(tv, v.s, v.e);
  const f = v.fetched;
  if (f && f.search === v.search && s >= f.s - 1 && v.e <= f.e + 1 && v.s >= f.s && res >= f.res / 2 && res <= f.res * 2) return false;
  const seq = ++v.requestSeq;
  v.loading = true;
  status.textContent = 'loading…';
  const params = new URLSearchParams({start_ns: toAbs(tv, s), end_ns: toAbs(tv, e), resolution_ns: String(res)});
  if (v.search) params.set('search', v.search);
  const started = performance.now();
  let win;
  try {
    win = await api(`${tv.urls.trace}?${job ? `${job.selection}&` : ''}${params}`);
  } catch (err) {
    if (seq === v.requestSeq && tv.page.alive()) { showError(err, 'Could not load the trace window'); status.textContent = ''; }
    return false;
  }
  if (seq !== v.requestSeq || !tv.page.alive()) return false;
  v.loading = false;
  v.data = new Map();
  let shown = 0, folded = 0, truncated = 0;
  for (const t of win.tracks) {
    const events = t.events.map((ev) => ({
      name: ev.name, s: offsetOf(tv, ev, 'start_ns'), d: num(ev.dur_ns), raw: ev,
      corr: ev.correlation, value: ev.value !== undefined ? num(ev.value) : undefined}));
    const merged = t.merged.map((m) => ({s: offsetOf(tv, m, 'start_ns'), e: offsetOf(tv, m, 'end_ns'), count: num(m.count),
                                         max: m.max_value !== undefined ? num(m.max_value) : undefined}));
    const depth = t.kind === 'counter' ? 0 : assignDepths(events);
    v.data.set(keyOf(t), {events, merged, depth, truncated: t.truncated, omitted: num(t.omitted_events)});
    shown += events.length;
    for (const m of merged) folded += m.count;
    if (t.truncated) truncated += num(t.omitted_events);
  }
  v.fetched = {s, e, res, search: v.search};
  const ms = performance.now() - started;
  status.textContent = `${fmtInt(shown)} events drawn, ${fmtInt(folded)} merged (< ${fmtDuration(res)})` +
    (truncated ? `, ${fmtInt(truncated)} left out (too many for one view: zoom in)` : '') +
    (v.search ? ` · matching “${v.search}”` : '') + ` · ${ms.toFixed(0)} ms`;
  element.dataset.loaded = String(Number(element.dataset.loaded || 0) + 1);
  if (!element.dataset.firstViewMs) element.dataset.firstViewMs = performance.now().toFixed(0);
  computeLayout(tv);
  draw(tv);
  return true;
}
