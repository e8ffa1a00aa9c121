// fleetprof web app — trace viewer, layout and geometry: where each track sits on the canvas
// (headings, nesting depth), time ↔ pixel ↔ trace-clock conversions, and which event is under
// the pointer. `tv` is the viewer's state (trace.js createTraceViewer).

import {exactInt, fmtDuration, num} from './core.js';

export const TRACE = {
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

// A track's key in tv.data: a job window has the same track ids in every rank's profile.
export const keyOf = (t) => (t.profile_id ? `${t.profile_id}|${t.id}` : t.id);

// Offsets on screen (ns from the profile's first event, Numbers) ↔ exact trace-clock ns.
export const toAbs = (tv, offset) => (tv.origin + BigInt(Math.round(offset))).toString();
export const offsetOf = (tv, obj, key) => Number(exactInt(obj, key) - tv.origin);

// tv.layout: {track, y, height} | {heading, y[, rank, rankHeading]}, top to bottom; and
// tv.canvasHeight.
export function computeLayout(tv) {
  const {v, job} = tv;
  const layout = [];
  let y = TRACE.axis;
  let group = null;
  let rank = null;
  for (const t of tv.tracks) {
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
  tv.layout = layout;
  tv.canvasHeight = y + 8;
}

// Nesting depth of each event of a track: events are sorted by start, longer first.
export function assignDepths(events) {
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

// Time offset → x on the canvas, and back.
export function xOf(tv, offset) {
  const width = tv.canvas.clientWidth - TRACE.labelWidth;
  return TRACE.labelWidth + ((offset - tv.v.s) / (tv.v.e - tv.v.s)) * width;
}
export function timeAt(tv, px) {
  const width = tv.canvas.clientWidth - TRACE.labelWidth;
  return tv.v.s + ((px - TRACE.labelWidth) / width) * (tv.v.e - tv.v.s);
}

// The step between axis ticks: 1, 2 or 5 × 10^k ns, about 110 px apart.
export function traceTickStep(spanNs, pixels) {
  const target = spanNs / Math.max(1, pixels / 110);
  const pow = 10 ** Math.floor(Math.log10(Math.max(target, 1)));
  for (const m of [1, 2, 5, 10]) if (pow * m >= target) return pow * m;
  return pow * 10;
}

// What is at canvas point (px, py): {track, event}, {track, merged} or null.
export function hit(tv, px, py) {
  const {v} = tv;
  const item = tv.layout.find((l) => l.track && py >= l.y && py < l.y + l.height);
  if (!item || px < TRACE.labelWidth) return null;
  const d = v.data.get(keyOf(item.track));
  if (!d || item.track.kind === 'counter') return null;
  const depth = Math.floor((py - item.y) / TRACE.row);
  const t = timeAt(tv, px);
  const slack = (v.e - v.s) / Math.max(1, tv.canvas.clientWidth - TRACE.labelWidth) * 2;
  let best = null;
  for (const e of d.events) {
    if (e.depth !== depth || e.s - slack > t || e.s + e.d + slack < t) continue;
    if (!best || Math.abs(e.s + e.d / 2 - t) < Math.abs(best.s + best.d / 2 - t)) best = e;
  }
  if (best) return {track: item.track, event: best};
  const m = d.merged.find((b) => depth === 0 && b.s - slack <= t && b.e + slack >= t);
  return m ? {track: item.track, merged: m} : null;
}
