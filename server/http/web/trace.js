'use strict';
// fleetprof web app — the trace viewer (/profiles/{id}/trace). A canvas timeline of one
// profile's stored events: device streams, host threads and memory counters, grouped by
// device and process. It asks the server for the window on screen at one-pixel resolution
// (GET …/trace), so it draws every event wider than a pixel exactly and the rest as merged
// blocks, whatever the size of the profile. Times on screen are offsets from the profile's
// first event; the exact trace-clock ns (BigInt) are kept for requests and details.

const TRACE = {
  row: 16,            // px per nesting level of a track
  labelWidth: 200,    // px of the track-name column
  axis: 30,           // px of the time axis
  groupHead: 20,      // px of a device/process heading
  counter: 40,        // px of a counter track
  gap: 4,             // px between tracks
  maxBins: 4000,      // resolution floor: the view / this many steps
  flowWindowNs: 2e9,  // how far around an event its runtime call / kernels are looked for
  perfettoOrigin: 'https://ui.perfetto.dev',
};

// Colour of an event by name (stable across views), so repeated kernels look alike.
function traceColor(name, kind) {
  if (kind === 'communication') return '#e07b39';
  if (kind === 'memory') return '#3a9b6f';
  let h = 0;
  for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) | 0;
  return `hsl(${((h % 360) + 360) % 360}, 55%, ${62 + (h >>> 8) % 12}%)`;
}

// `text` cut (with …) to what fits in `width` pixels; '' when not even one letter does.
function fitText(c, text, width) {
  if (c.measureText(text).width <= width) return text;
  let lo = 0, hi = text.length;
  while (lo < hi) {  // the longest prefix that fits with the ellipsis
    const mid = (lo + hi + 1) >> 1;
    if (c.measureText(`${text.slice(0, mid)}…`).width <= width) lo = mid; else hi = mid - 1;
  }
  return lo > 0 ? `${text.slice(0, lo)}…` : '';
}

function traceTickStep(spanNs, pixels) {
  const target = spanNs / Math.max(1, pixels / 110);
  const pow = 10 ** Math.floor(Math.log10(Math.max(target, 1)));
  for (const m of [1, 2, 5, 10]) if (pow * m >= target) return pow * m;
  return pow * 10;
}

async function renderTracePage(page, profileId) {
  const base = `/api/v1/profiles/${enc(profileId)}`;
  const head = h('section', {class: 'card trace-head'}, loadingBlock('Loading the profile…'));
  page.main.append(head);
  const [info, steps, first] = await Promise.all([
    page.load(api(base), head, 'Could not load the profile'),
    api(`${base}/steps`).catch(() => ({steps: []})),
    page.load(api(`${base}/trace?max_events_per_track=1`), head, 'Could not load the trace'),
  ]);
  if (!info || !first || !page.alive()) return;
  const profile = info.profile;
  if (!first.tracks.length) {
    clear(head).append(h('h1', null, 'Trace ', h('span', {class: 'mono'}, profileId)),
      emptyBlock(['This profile has no events to show: the trace held no device, host or memory events ',
                  `(${fmtInt(num(profile.events))} events read, ${fmtInt(num(profile.skipped_events))} skipped).`]),
      h('div', {class: 'link-row'}, h('a', {class: 'btn', href: `/profiles/${enc(profileId)}`}, '← Profile')));
    return;
  }
  const viewer = createTraceViewer(page, profileId, base, first, (steps && steps.steps) || []);
  clear(head).append(
    h('div', {class: 'trace-title'},
      h('h1', null, 'Trace ', h('span', {class: 'mono'}, profileId)),
      h('span', {class: 'muted'}, `${profile.job || 'unassigned'} · ${profile.node || ''} · ${profile.file_name || ''}`),
      h('a', {class: 'btn', href: `/profiles/${enc(profileId)}`}, '← Profile')),
    h('p', {class: 'explain'},
      'W/S zoom, A/D pan, 0 shows everything; drag to pan, Ctrl+wheel to zoom; Shift+drag selects a range ',
      'and shows its kernels and host events. Click an event for its details. Events narrower than a pixel ',
      'are drawn as grey merged blocks with their count.'),
    viewer.toolbar);
  page.main.append(viewer.element);
  viewer.start();
}

// /jobs/{job}/trace?capture=C (or ?profile=A&profile=B…): every rank of a capture in one viewer,
// on the lowest rank's clock (../shared/DESIGN.md, "Job timeline").
async function renderJobTracePage(page, jobName) {
  const q = query();
  const capture = q.get('capture') || q.get('capture_id') || '';
  const profiles = q.getAll('profile');
  const base = `/api/v1/jobs/${enc(jobName)}`;
  const head = h('section', {class: 'card trace-head'}, loadingBlock('Aligning the ranks…'));
  page.main.append(head);
  if (!capture && !profiles.length) {
    clear(head).append(h('h1', null, 'Job trace ', h('span', {class: 'mono'}, jobName)),
      emptyBlock(['Name a capture (?capture=ID, from the Captures page) or profiles (?profile=A&profile=B) ',
                  'to see their ranks together.']),
      h('div', {class: 'link-row'}, h('a', {class: 'btn', href: `/jobs/${enc(jobName)}`}, '← Job')));
    return;
  }
  const selection = capture ? new URLSearchParams({capture_id: capture}).toString()
    : new URLSearchParams(profiles.map((p) => ['profile', p])).toString();
  const first = await page.load(api(`${base}/trace?${selection}&max_events_per_track=1`), head, 'Could not load the job\'s trace');
  if (!first || !page.alive()) return;
  const reference = first.profiles.find((p) => p.reference) || first.profiles[0];
  const steps = reference ? await api(`/api/v1/profiles/${enc(reference.profile_id)}/steps`).catch(() => ({steps: []})) : {steps: []};
  if (!first.tracks.length) {
    clear(head).append(h('h1', null, 'Job trace ', h('span', {class: 'mono'}, jobName)),
      emptyBlock('These profiles have no events to show.'));
    return;
  }
  const offsets = new Map(first.profiles.map((p) => [p.profile_id, exactInt(p, 'clock_offset_ns') || 0n]));
  const job = {selection, offsets, ranks: first.profiles, collectives: `${base}/collectives?${selection}&limit=100000`};
  const viewer = createTraceViewer(page, jobName, base, first, (steps && steps.steps) || [], job);
  const unaligned = first.profiles.filter((p) => !p.reference && p.offset_source === 'none');
  clear(head).append(
    h('div', {class: 'trace-title'},
      h('h1', null, 'Job trace ', h('span', {class: 'mono'}, jobName)),
      h('span', {class: 'muted'}, `${capture ? `capture ${capture}` : `${profiles.length} profiles`} · ${first.profiles.length} ranks`),
      h('a', {class: 'btn', href: `/jobs/${enc(jobName)}`}, '← Job')),
    h('p', {class: 'explain'},
      `Every rank on rank ${reference ? reference.rank : '?'}'s clock: each profile's times plus its clock offset, measured from `,
      'the ends of collectives the ranks share (they end together). Click a rank\'s heading to fold it; click a ',
      'collective to see the same instance on every rank and who waited for whom. W/S zoom, A/D pan, 0 shows everything.'),
    unaligned.length ? h('div', {class: 'notice'}, `Not aligned (no collective in common with the reference): rank `,
      unaligned.map((p) => p.rank).join(', '), '. Their times are their own clocks.') : '',
    viewer.toolbar);
  page.main.append(viewer.element);
  viewer.start();
}

// `job` (a job's window, trace.js renderJobTracePage): {selection: 'capture_id=C', offsets:
// Map(profile id -> BigInt offset), ranks: [{rank, profile_id, …}], collectives: url}. Its tracks
// carry profile_id and rank and are keyed by both; details read each event from its own profile.
function createTraceViewer(page, profileId, base, first, steps, job = null) {
  const origin = exactInt(first, 'start_ns');
  const total = Number(exactInt(first, 'end_ns') - origin);
  const keyOf = (t) => (t.profile_id ? `${t.profile_id}|${t.id}` : t.id);
  const tracks = first.tracks.map((t) => ({id: t.id, name: t.name, kind: t.kind, group: t.group,
                                           profile_id: t.profile_id, rank: t.rank}));
  const q = query();
  // ?start_ns=&end_ns= (absolute, trace clock, as findings link them) or ?from=&to= (offsets).
  const absolute = (key) => {
    try { return /^\d+$/.test(q.get(key) || '') ? Number(BigInt(q.get(key)) - origin) : null; } catch (e) { return null; }
  };
  const v = {
    s: Math.max(0, absolute('start_ns') ?? num(q.get('from') || 0)),
    e: Math.min(total, absolute('end_ns') ?? num(q.get('to') || total)) || total,
    data: new Map(),        // track id -> {events, merged}
    fetched: null,          // {s, e, res, search}
    selected: null,         // {track, event}
    hover: null,
    range: null,            // {s, e} of a Shift+drag selection
    search: q.get('search') || '',
    loading: false,
    requestSeq: 0,
    collapsed: new Set(),   // ranks folded away (job windows)
    highlight: null,        // Set of `${profile_id}|${start_ns}`: one collective on every rank
  };
  if (!(v.e > v.s)) { v.s = 0; v.e = total; }
  const toAbs = (offset) => (origin + BigInt(Math.round(offset))).toString();
  const offsetOf = (obj, key) => Number(exactInt(obj, key) - origin);

  // ---- DOM ----
  const canvas = h('canvas', {class: 'trace-canvas', tabindex: '0', 'aria-label': 'trace timeline'});
  const scroller = h('div', {class: 'trace-scroller'}, canvas);
  const status = h('span', {class: 'trace-status muted'});
  const searchBox = h('input', {type: 'search', class: 'trace-search', placeholder: 'Search event names', value: v.search});
  const details = h('section', {class: 'card trace-details'},
    h('div', {class: 'card-head'}, h('h2', null, 'Details'), h('p', {class: 'explain'}, 'Click an event in the timeline.')));
  const rangePanel = h('section', {class: 'card trace-range hidden'});
  const tooltip = h('div', {class: 'trace-tooltip hidden'});
  const perfettoBtn = h('button', {class: 'btn trace-perfetto', type: 'button', title: 'Opens this window in ui.perfetto.dev (needs internet)'},
                        'Open in Perfetto');
  const exportBtn = h('button', {class: 'btn', type: 'button', title: 'Chrome-trace JSON of the window on screen'},
                      'Download window');
  const toolbar = h('div', {class: 'trace-toolbar'},
    searchBox,
    h('button', {class: 'btn', type: 'button', onclick: () => zoomTo(0, total)}, 'Show all'),
    ...(job ? [] : [exportBtn, perfettoBtn]), status);
  const element = h('div', {class: 'trace-viewer'},
    h('section', {class: 'card trace-card'}, scroller, tooltip), rangePanel, details);

  // ---- layout ----
  let layout = [];  // {track, y, height, depthOf: Map(event -> depth)} | {heading, y}
  let canvasHeight = 0;

  function computeLayout() {
    layout = [];
    let y = TRACE.axis;
    let group = null;
    let rank = null;
    for (const t of tracks) {
      if (job && t.rank !== rank) {
        rank = t.rank;
        group = null;
        const r = job.ranks.find((x2) => x2.profile_id === t.profile_id) || {};
        const clock = r.reference ? 'reference clock' : r.offset_source === 'none' ? 'clock not aligned'
          : `clock ${num(r.clock_offset_ns) < 0 ? '−' : '+'}${fmtDuration(Math.abs(num(r.clock_offset_ns)))} ± ${fmtDuration(num(r.offset_uncertainty_ns))} (${r.offset_source})`;
        layout.push({heading: `${v.collapsed.has(rank) ? '▸' : '▾'} Rank ${rank} · ${r.node || ''} · ${clock}`,
                     rank, y, rankHeading: true});
        y += TRACE.groupHead;
      }
      if (job && v.collapsed.has(t.rank)) continue;
      const key = `${t.kind}:${t.group}`;
      if (key !== group) {
        group = key;
        const label = t.kind === 'device' ? `Device ${t.group}` : t.kind === 'host' ? `Process ${t.group}` : 'Memory';
        layout.push({heading: label, y});
        y += TRACE.groupHead;
      }
      const d = v.data.get(keyOf(t));
      let height = TRACE.row;
      if (t.kind === 'counter') {
        height = TRACE.counter;
      } else if (d) {
        height = (d.depth + 1) * TRACE.row;
      }
      layout.push({track: t, y, height});
      y += height + TRACE.gap;
    }
    canvasHeight = y + 8;
  }

  // Nesting depth of each event of a track: events are sorted by start, longer first.
  function assignDepths(events) {
    const ends = [];
    let depth = 0;
    for (const e of events) {
      while (ends.length && ends[ends.length - 1] <= e.s) ends.pop();
      e.depth = ends.length;
      ends.push(e.s + e.d);
      depth = Math.max(depth, e.depth);
    }
    return depth;
  }

  // ---- data ----
  function resolutionFor(s, e) {
    const width = Math.max(200, canvas.clientWidth - TRACE.labelWidth);
    return Math.max(1, Math.floor((e - s) / Math.min(TRACE.maxBins, width)));
  }

  async function fetchView() {
    const span = v.e - v.s;
    const s = Math.max(-span, v.s - span / 2);
    const e = v.e + span / 2;
    const res = resolutionFor(v.s, v.e);
    const f = v.fetched;
    if (f && f.search === v.search && s >= f.s - 1 && v.e <= f.e + 1 && v.s >= f.s && res >= f.res / 2 && res <= f.res * 2) return;
    const seq = ++v.requestSeq;
    v.loading = true;
    status.textContent = 'loading…';
    const params = new URLSearchParams({start_ns: toAbs(s), end_ns: toAbs(e), resolution_ns: String(res)});
    if (v.search) params.set('search', v.search);
    const started = performance.now();
    let win;
    try {
      win = await api(`${base}/trace?${job ? `${job.selection}&` : ''}${params}`);
    } catch (err) {
      if (seq === v.requestSeq && page.alive()) { showError(err, 'Could not load the trace window'); status.textContent = ''; }
      return;
    }
    if (seq !== v.requestSeq || !page.alive()) return;
    v.loading = false;
    v.data = new Map();
    let shown = 0, folded = 0, truncated = 0;
    for (const t of win.tracks) {
      const events = t.events.map((ev) => ({
        name: ev.name, s: offsetOf(ev, 'start_ns'), d: num(ev.dur_ns), raw: ev,
        corr: ev.correlation, value: ev.value !== undefined ? num(ev.value) : undefined}));
      const merged = t.merged.map((m) => ({s: offsetOf(m, 'start_ns'), e: offsetOf(m, 'end_ns'), count: num(m.count),
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
    computeLayout();
    draw();
    selectPending();
  }
  const fetchSoon = debounce(() => fetchView(), 80);

  // ---- drawing ----
  function x(offset) {
    const width = canvas.clientWidth - TRACE.labelWidth;
    return TRACE.labelWidth + ((offset - v.s) / (v.e - v.s)) * width;
  }
  function timeAt(px) {
    const width = canvas.clientWidth - TRACE.labelWidth;
    return v.s + ((px - TRACE.labelWidth) / width) * (v.e - v.s);
  }

  function draw() {
    const dpr = window.devicePixelRatio || 1;
    const width = scroller.clientWidth;
    if (canvas.width !== Math.round(width * dpr) || canvas.height !== Math.round(canvasHeight * dpr)) {
      canvas.width = Math.round(width * dpr);
      canvas.height = Math.round(canvasHeight * dpr);
      canvas.style.width = `${width}px`;
      canvas.style.height = `${canvasHeight}px`;
    }
    const c = canvas.getContext('2d');
    c.setTransform(dpr, 0, 0, dpr, 0, 0);
    c.clearRect(0, 0, width, canvasHeight);
    c.font = '11px sans-serif';
    c.textBaseline = 'middle';
    drawAxis(c, width);
    for (const item of layout) {
      if (item.heading) {
        c.fillStyle = item.rankHeading ? '#dfe6f3' : '#eef1f6';
        c.fillRect(0, item.y, width, TRACE.groupHead - 2);
        c.fillStyle = '#1d2430';
        c.font = 'bold 11px sans-serif';
        c.fillText(item.heading, 6, item.y + TRACE.groupHead / 2 - 1);
        c.font = '11px sans-serif';
        continue;
      }
      drawTrack(c, item, width);
    }
    if (v.range) {
      c.fillStyle = 'rgba(56, 116, 232, 0.12)';
      const x0 = Math.max(TRACE.labelWidth, x(v.range.s)), x1 = Math.min(width, x(v.range.e));
      c.fillRect(x0, TRACE.axis, Math.max(1, x1 - x0), canvasHeight - TRACE.axis);
    }
  }

  function drawAxis(c, width) {
    c.fillStyle = '#fafbfd';
    c.fillRect(0, 0, width, TRACE.axis);
    c.strokeStyle = '#dde2ea';
    c.beginPath(); c.moveTo(0, TRACE.axis - 0.5); c.lineTo(width, TRACE.axis - 0.5); c.stroke();
    const step = traceTickStep(v.e - v.s, width - TRACE.labelWidth);
    c.fillStyle = '#6b7585';
    for (let t = Math.ceil(v.s / step) * step; t <= v.e; t += step) {
      const px = x(t);
      c.fillRect(px, TRACE.axis - 6, 1, 6);
      c.fillText(fmtDuration(t), px + 3, 10);
    }
    // Step markers: where each ProfilerStep starts; labelled where there is room for it.
    c.fillStyle = 'rgba(56,116,232,0.9)';
    let lastMark = -Infinity, lastLabel = -Infinity;
    for (const st of steps) {
      const s = offsetOf(st, 'start_ns');
      if (s < v.s || s > v.e) continue;
      const px = x(s);
      if (px - lastMark < 3) continue;
      lastMark = px;
      c.fillRect(px, 14, 1, TRACE.axis - 14);
      if (px - lastLabel >= 64) {
        c.fillText(`step ${st.step}`, px + 3, 21);
        lastLabel = px;
      }
    }
    c.fillStyle = '#6b7585';
    c.fillText(`${fmtDuration(v.e - v.s)} shown`, 6, 10);
  }

  function drawTrack(c, item, width) {
    const t = item.track;
    const d = v.data.get(keyOf(t));
    c.save();
    c.beginPath();
    c.rect(0, item.y, width, item.height);
    c.clip();
    c.fillStyle = '#1d2430';
    const label = t.kind === 'device' ? `stream ${t.name}` : t.name;
    c.fillText(label.length > 30 ? `${label.slice(0, 29)}…` : label, 14, item.y + TRACE.row / 2);
    if (d && d.truncated) { c.fillStyle = '#b7791f'; c.fillText(`+${fmtInt(d.omitted)} not drawn`, 14, item.y + TRACE.row * 1.5); }
    c.restore();
    if (!d) return;
    c.save();
    c.beginPath();
    c.rect(TRACE.labelWidth, item.y, width - TRACE.labelWidth, item.height);
    c.clip();
    if (t.kind === 'counter') {
      drawCounter(c, item, d);
    } else {
      for (const m of d.merged) {
        const x0 = x(m.s), x1 = x(m.e);
        c.fillStyle = '#b9c0cc';
        c.fillRect(x0, item.y + 2, Math.max(1, x1 - x0), TRACE.row - 4);
      }
      for (const e of d.events) {
        const x0 = x(e.s), x1 = x(e.s + e.d);
        if (x1 < TRACE.labelWidth || x0 > width) continue;
        const y = item.y + e.depth * TRACE.row;
        const kind = t.kind === 'device' && e.raw.args ? e.raw.args.kind : (t.kind === 'device' && /nccl|rccl|hccl/i.test(e.name) ? 'communication' : '');
        c.fillStyle = traceColor(e.name, kind);
        const w = Math.max(1, x1 - x0);
        c.fillRect(x0, y + 1, w, TRACE.row - 2);
        if (v.selected && v.selected.event === e) {
          c.strokeStyle = '#1d2430'; c.lineWidth = 2; c.strokeRect(x0, y + 1, w, TRACE.row - 2); c.lineWidth = 1;
        } else if (v.highlight && v.highlight.has(`${t.profile_id}|${exactInt(e.raw, 'start_ns')}`)) {
          c.strokeStyle = '#d9480f'; c.lineWidth = 3; c.strokeRect(x0 - 1, y, w + 2, TRACE.row); c.lineWidth = 1;
        }
        if (w > 30) {
          const left = Math.max(x0, TRACE.labelWidth);
          const text = fitText(c, e.name, Math.min(x1, width) - left - 6);
          if (text) { c.fillStyle = '#1d2430'; c.fillText(text, left + 3, y + TRACE.row / 2); }
        }
      }
    }
    c.restore();
  }

  function drawCounter(c, item, d) {
    let max = 1;
    for (const e of d.events) max = Math.max(max, e.value || 0);
    for (const m of d.merged) max = Math.max(max, m.max || 0);
    const yOf = (value) => item.y + item.height - 2 - ((value || 0) / max) * (item.height - 6);
    c.fillStyle = 'rgba(58,155,111,0.35)';
    c.strokeStyle = '#3a9b6f';
    for (const e of d.events) {
      const x0 = x(e.s), x1 = x(e.s + Math.max(e.d, 0));
      c.fillRect(x0, yOf(e.value), Math.max(1, x1 - x0), item.y + item.height - 2 - yOf(e.value));
    }
    for (const m of d.merged) {
      const x0 = x(m.s), x1 = x(m.e);
      c.fillRect(x0, yOf(m.max), Math.max(1, x1 - x0), item.y + item.height - 2 - yOf(m.max));
    }
    c.fillStyle = '#6b7585';
    c.fillText(`peak in view ${fmtBytes(max)}`, TRACE.labelWidth + 4, item.y + 8);
  }

  // ---- hit testing and details ----
  function hit(px, py) {
    const item = layout.find((l) => l.track && py >= l.y && py < l.y + l.height);
    if (!item || px < TRACE.labelWidth) return null;
    const d = v.data.get(keyOf(item.track));
    if (!d || item.track.kind === 'counter') return null;
    const depth = Math.floor((py - item.y) / TRACE.row);
    const t = timeAt(px);
    const slack = (v.e - v.s) / Math.max(1, canvas.clientWidth - TRACE.labelWidth) * 2;
    let best = null;
    for (const e of d.events) {
      if (e.depth !== depth || e.s - slack > t || e.s + e.d + slack < t) continue;
      if (!best || Math.abs(e.s + e.d / 2 - t) < Math.abs(best.s + best.d / 2 - t)) best = e;
    }
    if (best) return {track: item.track, event: best};
    const m = d.merged.find((b) => depth === 0 && b.s - slack <= t && b.e + slack >= t);
    return m ? {track: item.track, merged: m} : null;
  }

  async function showDetails(sel) {
    v.selected = sel;
    draw();
    const e = sel.event;
    // Arguments and linked events come from the event's own profile, on its own clock.
    const own = job && sel.track.profile_id
      ? {base: `/api/v1/profiles/${enc(sel.track.profile_id)}`, shift: job.offsets.get(sel.track.profile_id) || 0n}
      : {base, shift: 0n};
    const rows = [
      ['Name', h('span', {class: 'mono trace-event-name'}, e.name)],
      ['Track', `${job ? `rank ${sel.track.rank} · ` : ''}${sel.track.kind} · ${sel.track.group} · ${sel.track.name}`],
      ['Start', h('span', {title: `${exactInt(e.raw, 'start_ns')} ns in the trace clock`}, `${fmtOffset(e.s)} (${exactInt(e.raw, 'start_ns')} ns)`)],
      ['Duration', h('span', {class: 'trace-event-dur'}, `${fmtDuration(e.d)} (${fmtInt(e.d)} ns)`)],
    ];
    if (e.corr !== undefined) rows.push(['Correlation', String(e.corr)]);
    const list = h('dl', {class: 'kv-list'}, rows.map(([k, val]) => [h('dt', null, k), h('dd', null, val)]));
    const links = h('div', {class: 'trace-links'});
    const collective = h('div', {class: 'trace-collective'});
    clear(details).append(h('div', {class: 'card-head'}, h('h2', null, 'Details')), list, collective, links);
    if (job && sel.track.kind === 'device') showCollective(sel, collective);
    else if (v.highlight) { v.highlight = null; draw(); }
    const ownStart = exactInt(e.raw, 'start_ns') - own.shift;
    const args = new URLSearchParams({start_ns: ownStart.toString(),
      end_ns: (ownStart + 1n).toString(), resolution_ns: '1', args: '1', track: sel.track.id});
    const one = await api(`${own.base}/trace?${args}`).catch(() => null);
    if (!page.alive() || v.selected !== sel) return;
    const match = one && one.tracks[0] && one.tracks[0].events.find((x2) => x2.name === e.name && num(x2.dur_ns) === e.d);
    if (match && match.args) {
      if (match.args.category) list.append(h('dt', null, 'Category'), h('dd', {class: 'trace-event-cat'}, match.args.category));
      if (match.args.kind) list.append(h('dt', null, 'Kind'), h('dd', null, match.args.kind));
    }
    if (e.corr === undefined) return;
    links.append(loadingBlock(sel.track.kind === 'device' ? 'Looking for the launching call…' : 'Looking for launched kernels…'));
    const flow = new URLSearchParams({correlation: String(e.corr), resolution_ns: '1',
      start_ns: (BigInt(toAbs(Math.max(0, e.s - TRACE.flowWindowNs))) - own.shift).toString(),
      end_ns: (BigInt(toAbs(Math.min(total, e.s + e.d + TRACE.flowWindowNs))) - own.shift).toString()});
    const linked = await api(`${own.base}/trace?${flow}`).catch(() => null);
    if (!page.alive() || v.selected !== sel) return;
    clear(links);
    const others = [];
    for (const t0 of (linked ? linked.tracks : [])) {
      const t = job ? Object.assign({}, t0, {profile_id: sel.track.profile_id, rank: sel.track.rank}) : t0;
      for (const ev0 of t.events) {
        const ev = own.shift ? Object.assign({}, ev0, {start_ns: (exactInt(ev0, 'start_ns') + own.shift).toString()}) : ev0;
        if (t.id === sel.track.id && offsetOf(ev, 'start_ns') === e.s) continue;
        others.push([t, ev]);
      }
    }
    if (!others.length) { links.append(h('p', {class: 'muted'}, 'No other event shares this correlation id nearby.')); return; }
    links.append(h('h3', null, sel.track.kind === 'device' ? 'Launched by' : 'Launches'));
    for (const [t, ev] of others.slice(0, 20)) {
      links.append(h('button', {class: 'btn trace-jump', type: 'button', onclick: () => jumpTo(keyOf(t), ev)},
        `${t.kind === 'device' ? 'kernel' : 'call'} ${ev.name.slice(0, 60)} · ${fmtDuration(num(ev.dur_ns))} on ${t.id}`));
    }
  }

  // After a jump: selects the event once a loaded window holds it.
  function selectPending() {
    const p = v.pendingSelect;
    const d = p && v.data.get(p.trackId);
    const e = d && d.events.find((x2) => x2.s === p.s && x2.d === p.d && x2.name === p.name);
    if (!e) return;
    v.pendingSelect = null;
    showDetails({track: tracks.find((t) => keyOf(t) === p.trackId), event: e});
  }

  // A job's collective: the same instance on every rank, highlighted, with each rank's wait.
  let collectives = null;  // the job's matched instances, fetched once
  async function showCollective(sel, box) {
    if (!collectives) {
      box.append(loadingBlock('Matching this collective across ranks…'));
      collectives = await api(job.collectives).catch((err) => ({error: err}));
      if (!page.alive() || v.selected !== sel) return;
      clear(box);
    }
    const start = exactInt(sel.event.raw, 'start_ns');
    const instance = (collectives.collectives || []).find((c) => c.ranks.some((r) =>
      r.profile_id === sel.track.profile_id && exactInt(r, 'start_ns') === start));
    if (!instance) {
      if (v.highlight) { v.highlight = null; draw(); }
      if (collectives.error) box.append(h('p', {class: 'muted'}, `Collectives could not be matched: ${collectives.error.message}`));
      return;
    }
    v.highlight = new Set(instance.ranks.map((r) => `${r.profile_id}|${exactInt(r, 'start_ns')}`));
    draw();
    box.append(h('h3', null, `${instance.op} #${instance.seq} on ${instance.ranks.length} ranks`),
      h('p', {class: 'explain'}, instance.last_rank ? `Rank ${instance.last_rank} arrived last; the others waited for it.`
        : 'No rank arrived later than the others by more than the clocks\' uncertainty.'),
      h('table', {class: 'data-table trace-collective-table'},
        h('thead', null, h('tr', null, h('th', null, 'Rank'), h('th', {class: 'num'}, 'Start'), h('th', {class: 'num'}, 'End'),
          h('th', {class: 'num'}, 'Waited'))),
        h('tbody', null, instance.ranks.map((r) => h('tr', {class: r.rank === instance.last_rank ? 'trace-last-rank' : ''},
          h('td', null, r.rank), h('td', {class: 'num'}, fmtOffset(Number(exactInt(r, 'start_ns') - origin))),
          h('td', {class: 'num'}, fmtOffset(Number(exactInt(r, 'end_ns') - origin))),
          h('td', {class: 'num'}, fmtDuration(num(r.wait_ns))))))));
  }

  function jumpTo(trackId, ev) {
    const s = offsetOf(ev, 'start_ns'), d = num(ev.dur_ns);
    const span = Math.max(d * 8, 20000);
    v.pendingSelect = {trackId, s, d, name: ev.name};
    zoomTo(s + d / 2 - span / 2, s + d / 2 + span / 2);
    selectPending();  // the loaded window may hold it already; else the next load selects it
  }

  // ---- range selection ----
  async function showRange() {
    const r = v.range;
    if (job) {  // range totals are a profile's: each rank's own trace has them
      rangePanel.classList.remove('hidden');
      clear(rangePanel).append(h('div', {class: 'card-head'}, h('h2', null, `Selection · ${fmtDuration(r.e - r.s)}`),
        h('p', {class: 'explain'}, 'Totals of a selection are per profile: open a rank\'s own trace.')),
        h('div', {class: 'link-row'}, job.ranks.map((p) => h('a', {class: 'btn', href: urlWith(`/profiles/${enc(p.profile_id)}/trace`,
          {start_ns: (BigInt(toAbs(r.s)) - (job.offsets.get(p.profile_id) || 0n)).toString(),
           end_ns: (BigInt(toAbs(r.e)) - (job.offsets.get(p.profile_id) || 0n)).toString()})}, `Rank ${p.rank}`))));
      return;
    }
    rangePanel.classList.remove('hidden');
    clear(rangePanel).append(h('div', {class: 'card-head'}, h('h2', null, `Selection · ${fmtDuration(r.e - r.s)}`),
      h('p', {class: 'explain'}, 'Time of each name inside the selection (events cut at its edges count only their part inside).')),
      loadingBlock('Adding up the selection…'));
    const params = new URLSearchParams({start_ns: toAbs(r.s), end_ns: toAbs(r.e), limit: '15'});
    const out = await api(`${base}/range?${params}`).catch((err) => { showError(err); return null; });
    if (!out || !page.alive() || v.range !== r) return;
    const table = (rows, what) => rows.length ? h('table', {class: 'data-table trace-range-table'},
      h('thead', null, h('tr', null, h('th', null, what), h('th', {class: 'num'}, 'Count'), h('th', {class: 'num'}, 'Time in selection'))),
      h('tbody', null, rows.map((row) => h('tr', null, h('td', {class: 'mono'}, row.name),
        h('td', {class: 'num'}, fmtInt(num(row.count))), h('td', {class: 'num'}, fmtDuration(num(row.total_ns)))))))
      : emptyBlock(`No ${what.toLowerCase()} events in the selection.`);
    rangePanel.lastChild.remove();
    rangePanel.append(
      h('div', {class: 'stat-row'}, stat('Device busy', fmtDuration(num(out.device_busy_ns))),
        stat('Selection', fmtDuration(r.e - r.s))),
      h('div', {class: 'link-row'},
        h('button', {class: 'btn', type: 'button', onclick: () => zoomTo(r.s, r.e)}, 'Zoom to selection'),
        h('button', {class: 'btn', type: 'button', onclick: () => { v.range = null; rangePanel.classList.add('hidden'); draw(); }}, 'Clear')),
      h('h3', null, 'Kernels'), table(out.kernels, 'Kernel'), h('h3', null, 'Host events'), table(out.host, 'Host'));
  }

  // ---- navigation ----
  function zoomTo(s, e) {
    const minSpan = 100;
    if (e - s < minSpan) { const mid = (s + e) / 2; s = mid - minSpan / 2; e = mid + minSpan / 2; }
    const span = e - s;
    if (span > total * 1.2) { s = -total * 0.1; e = total * 1.1; }
    v.s = s; v.e = e;
    setQuery({from: Math.round(s), to: Math.round(e), start_ns: null, end_ns: null});
    draw();
    fetchSoon();
  }
  function zoom(factor, center) {
    const c0 = center === undefined ? (v.s + v.e) / 2 : center;
    zoomTo(c0 - (c0 - v.s) * factor, c0 + (v.e - c0) * factor);
  }
  function pan(fraction) {
    const d = (v.e - v.s) * fraction;
    zoomTo(v.s + d, v.e + d);
  }

  let mouseX = null;
  function onKey(event) {
    if (!page.alive()) { document.removeEventListener('keydown', onKey); return; }
    if (event.target && (event.target.tagName === 'INPUT' || event.target.tagName === 'TEXTAREA')) return;
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const center = mouseX !== null ? timeAt(mouseX) : undefined;
    const k = event.key.toLowerCase();
    if (k === 'w') zoom(0.8, center);
    else if (k === 's') zoom(1.25, center);
    else if (k === 'a') pan(-0.15);
    else if (k === 'd') pan(0.15);
    else if (k === '0') zoomTo(0, total);
    else if (k === 'escape') { v.range = null; rangePanel.classList.add('hidden'); draw(); }
    else return;
    event.preventDefault();
  }

  let drag = null;
  canvas.addEventListener('mousedown', (event) => {
    const px = event.offsetX;
    if (px < TRACE.labelWidth && !job) return;
    drag = {x: px, s: v.s, e: v.e, t: timeAt(px), moved: false, select: event.shiftKey};
    canvas.focus();
  });
  window.addEventListener('mousemove', (event) => {
    if (!drag || !page.alive()) return;
    const px = event.clientX - canvas.getBoundingClientRect().left;
    if (Math.abs(px - drag.x) > 3) drag.moved = true;
    if (!drag.moved) return;
    if (drag.select) {
      const t = timeAt(px);
      v.range = {s: Math.min(drag.t, t), e: Math.max(drag.t, t)};
      draw();
    } else {
      const dt = ((px - drag.x) / (canvas.clientWidth - TRACE.labelWidth)) * (drag.e - drag.s);
      v.s = drag.s - dt; v.e = drag.e - dt;
      draw();
      fetchSoon();
    }
  });
  window.addEventListener('mouseup', (event) => {
    if (!drag || !page.alive()) return;
    const d = drag;
    drag = null;
    if (d.moved) {
      if (d.select && v.range) showRange();
      else zoomTo(v.s, v.e);
      return;
    }
    const rect = canvas.getBoundingClientRect();
    const py = event.clientY - rect.top;
    const heading = job && layout.find((l) => l.rankHeading && py >= l.y && py < l.y + TRACE.groupHead);
    if (heading) {
      if (v.collapsed.has(heading.rank)) v.collapsed.delete(heading.rank); else v.collapsed.add(heading.rank);
      computeLayout();
      draw();
      return;
    }
    const found = hit(event.clientX - rect.left, py);
    if (found && found.event) showDetails(found);
    else if (found && found.merged) {
      zoomTo(found.merged.s - (found.merged.e - found.merged.s) * 0.1, found.merged.e + (found.merged.e - found.merged.s) * 0.1);
    }
  });
  canvas.addEventListener('mousemove', (event) => {
    mouseX = event.offsetX;
    const found = hit(event.offsetX, event.offsetY);
    if (!found) { tooltip.classList.add('hidden'); return; }
    tooltip.textContent = found.event ? `${found.event.name} · ${fmtDuration(found.event.d)}`
      : `${fmtInt(found.merged.count)} events shorter than a pixel · click to zoom in`;
    tooltip.style.left = `${event.offsetX + 14}px`;
    tooltip.style.top = `${event.offsetY + 14}px`;
    tooltip.classList.remove('hidden');
  });
  canvas.addEventListener('mouseleave', () => { mouseX = null; tooltip.classList.add('hidden'); });
  canvas.addEventListener('wheel', (event) => {
    if (event.ctrlKey || event.metaKey) {
      event.preventDefault();
      zoom(event.deltaY > 0 ? 1.2 : 1 / 1.2, timeAt(event.offsetX));
    } else if (event.shiftKey || Math.abs(event.deltaX) > Math.abs(event.deltaY)) {
      event.preventDefault();
      pan((event.deltaX || event.deltaY) > 0 ? 0.1 : -0.1);
    }
  }, {passive: false});
  window.addEventListener('resize', () => { if (page.alive()) { draw(); fetchSoon(); } });

  searchBox.addEventListener('input', debounce(() => {
    v.search = searchBox.value.trim();
    setQuery({search: v.search});
    fetchSoon();
  }, 250));

  // ---- export and Perfetto ----
  async function fetchWindowBytes() {
    const params = new URLSearchParams({format: 'chrome_json', start_ns: toAbs(Math.max(0, v.s)), end_ns: toAbs(Math.max(v.s + 1, v.e))});
    const headers = {};
    const token = readToken();
    if (token) headers.Authorization = `Bearer ${token}`;
    const response = await fetch(`${base}/export?${params}`, {headers});
    if (!response.ok) throw new ApiError(HTTP_CODE_NAMES[response.status] || 'UNKNOWN', `export failed (HTTP ${response.status})`, response.status);
    return response.arrayBuffer();
  }
  exportBtn.addEventListener('click', async () => {
    try {
      const bytes = await fetchWindowBytes();
      const link = h('a', {href: URL.createObjectURL(new Blob([bytes], {type: 'application/json'})),
                           download: `${profileId}-window.trace.json`});
      document.body.append(link);
      link.click();
      link.remove();
    } catch (err) { showError(err, 'Could not export the window'); }
  });
  // Perfetto's postMessage protocol: PING until the UI answers PONG, then hand it the trace.
  perfettoBtn.addEventListener('click', async () => {
    const win = window.open(`${TRACE.perfettoOrigin}/#!/`, '_blank');
    if (!win) { showError(new Error('the browser blocked the Perfetto window (allow pop-ups for this page)')); return; }
    let bytes;
    try { bytes = await fetchWindowBytes(); } catch (err) { showError(err, 'Could not export the window'); return; }
    const title = `fleetprof ${profileId} ${fmtOffset(v.s)}…${fmtOffset(v.e)}`;
    let tries = 0;
    const ping = setInterval(() => {
      if (++tries > 60) { clearInterval(ping); window.removeEventListener('message', onPong); showError(new Error('Perfetto did not answer (is ui.perfetto.dev reachable from this browser?)')); return; }
      win.postMessage('PING', TRACE.perfettoOrigin);
    }, 500);
    function onPong(event) {
      if (event.origin !== TRACE.perfettoOrigin || event.data !== 'PONG') return;
      clearInterval(ping);
      window.removeEventListener('message', onPong);
      win.postMessage({perfetto: {buffer: bytes, title, fileName: `${profileId}.trace.json`, url: location.href}}, TRACE.perfettoOrigin);
    }
    window.addEventListener('message', onPong);
    win.postMessage('PING', TRACE.perfettoOrigin);
  });

  // Where drawn events are on screen (page coordinates): lets a test click one as a user would.
  element.visibleEventBoxes = (kind) => {
    const rect = canvas.getBoundingClientRect();
    const out = [];
    for (const item of layout) {
      if (!item.track || (kind && item.track.kind !== kind)) continue;
      const d = v.data.get(keyOf(item.track));
      for (const e of (d ? d.events : [])) {
        const x0 = Math.max(TRACE.labelWidth, x(e.s)), x1 = Math.min(canvas.clientWidth, x(e.s + e.d));
        if (x1 - x0 < 4) continue;
        out.push({name: e.name, track: item.track.id, rank: item.track.rank, profile_id: item.track.profile_id, x: rect.left + window.scrollX + (x0 + x1) / 2,
                  y: rect.top + window.scrollY + item.y + e.depth * TRACE.row + TRACE.row / 2 - scroller.scrollTop,
                  width: x1 - x0, dur_ns: e.d, correlation: e.corr});
      }
    }
    return out;
  };
  element.viewSpanNs = () => v.e - v.s;
  element.highlighted = () => (v.highlight ? [...v.highlight] : []);
  element.rankHeadings = () => layout.filter((l) => l.rankHeading).map((l) => {
    const rect = canvas.getBoundingClientRect();
    return {rank: l.rank, x: rect.left + window.scrollX + TRACE.labelWidth / 2, y: rect.top + window.scrollY + l.y + TRACE.groupHead / 2 - scroller.scrollTop};
  });

  return {
    element, toolbar,
    start() {
      document.addEventListener('keydown', onKey);
      computeLayout();
      draw();
      fetchView();
    },
  };
}
