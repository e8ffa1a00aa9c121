// fleetprof web app — trace viewer, drawing: the time axis with step markers, headings, each
// track's events (merged blocks in grey), counters, the selection and the highlighted
// collective, on the canvas at the device pixel ratio.

import {exactInt, fitText, fmtBytes, fmtDuration, fmtInt} from './core.js';
import {TRACE, keyOf, offsetOf, traceTickStep, xOf} from './trace-layout.js';

// Colour of an event by name (stable across views), so repeated kernels look alike.
function traceColor(name, kind) {
  if (kind === 'communication') return '#e07b39';
  if (kind === 'memory') return '#3a9b6f';
  let h = 0;
  for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) | 0;
  return `hsl(${((h % 360) + 360) % 360}, 55%, ${62 + (h >>> 8) % 12}%)`;
}

// Draws the whole view (cheap: only what tv.data holds for the window on screen).
export function draw(tv) {
  const {v, canvas, canvasHeight} = tv;
  const dpr = window.devicePixelRatio || 1;
  const width = tv.scroller.clientWidth;
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
  drawAxis(tv, c, width);
  for (const item of tv.layout) {
    if (item.heading) {
      c.fillStyle = item.rankHeading ? '#dfe6f3' : '#eef1f6';
      c.fillRect(0, item.y, width, TRACE.groupHead - 2);
      c.fillStyle = '#1d2430';
      c.font = 'bold 11px sans-serif';
      c.fillText(item.heading, 6, item.y + TRACE.groupHead / 2 - 1);
      c.font = '11px sans-serif';
      continue;
    }
    drawTrack(tv, c, item, width);
  }
  if (v.range) {
    c.fillStyle = 'rgba(56, 116, 232, 0.12)';
    const x0 = Math.max(TRACE.labelWidth, xOf(tv, v.range.s)), x1 = Math.min(width, xOf(tv, v.range.e));
    c.fillRect(x0, TRACE.axis, Math.max(1, x1 - x0), canvasHeight - TRACE.axis);
  }
}

function drawAxis(tv, c, width) {
  const {v} = tv;
  c.fillStyle = '#fafbfd';
  c.fillRect(0, 0, width, TRACE.axis);
  c.strokeStyle = '#dde2ea';
  c.beginPath(); c.moveTo(0, TRACE.axis - 0.5); c.lineTo(width, TRACE.axis - 0.5); c.stroke();
  const step = traceTickStep(v.e - v.s, width - TRACE.labelWidth);
  c.fillStyle = '#6b7585';
  for (let t = Math.ceil(v.s / step) * step; t <= v.e; t += step) {
    const px = xOf(tv, t);
    c.fillRect(px, TRACE.axis - 6, 1, 6);
    c.fillText(fmtDuration(t), px + 3, 10);
  }
  // Step markers: where each ProfilerStep starts; labelled where there is room for it.
  c.fillStyle = 'rgba(56,116,232,0.9)';
  let lastMark = -Infinity, lastLabel = -Infinity;
  for (const st of tv.steps) {
    const s = offsetOf(tv, st, 'start_ns');
    if (s < v.s || s > v.e) continue;
    const px = xOf(tv, s);
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

function drawTrack(tv, c, item, width) {
  const {v} = tv;
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
    drawCounter(tv, c, item, d);
  } else {
    for (const m of d.merged) {
      const x0 = xOf(tv, m.s), x1 = xOf(tv, m.e);
      c.fillStyle = '#b9c0cc';
      c.fillRect(x0, item.y + 2, Math.max(1, x1 - x0), TRACE.row - 4);
    }
    for (const e of d.events) {
      const x0 = xOf(tv, e.s), x1 = xOf(tv, e.s + e.d);
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

function drawCounter(tv, c, item, d) {
  let max = 1;
  for (const e of d.events) max = Math.max(max, e.value || 0);
  for (const m of d.merged) max = Math.max(max, m.max || 0);
  const yOf = (value) => item.y + item.height - 2 - ((value || 0) / max) * (item.height - 6);
  c.fillStyle = 'rgba(58,155,111,0.35)';
  c.strokeStyle = '#3a9b6f';
  for (const e of d.events) {
    const x0 = xOf(tv, e.s), x1 = xOf(tv, e.s + Math.max(e.d, 0));
    c.fillRect(x0, yOf(e.value), Math.max(1, x1 - x0), item.y + item.height - 2 - yOf(e.value));
  }
  for (const m of d.merged) {
    const x0 = xOf(tv, m.s), x1 = xOf(tv, m.e);
    c.fillRect(x0, yOf(m.max), Math.max(1, x1 - x0), item.y + item.height - 2 - yOf(m.max));
  }
  c.fillStyle = '#6b7585';
  c.fillText(`peak in view ${fmtBytes(max)}`, TRACE.labelWidth + 4, item.y + 8);
}
