// fleetprof web app — charts: device time bars (HTML), step bars, memory timelines and device
// sample lines (inline SVG, drawn at the container's pixel width and redrawn on resize).

import {clear, debounce, durationSpan, emptyBlock, fmtBytes, fmtDuration, fmtInt, fmtOffset, fmtPct, h, num, svg} from './core.js';

export const KIND_COLORS = {compute: '#3874e8', communication: '#e8822c', memory: '#9254c8',
                            idle: '#e3e7ee', busy: '#5b8def'};
const SERIES_COLORS = ['#3874e8', '#e8822c', '#2f9e6b', '#9254c8', '#d64562', '#1b9cb5',
                       '#b58a1b', '#6b7280'];

// ---------------------------------------------------------------------------------------------
// Responsive drawing: a chart is a function of its width; redraws on window resize while the
// page that made it is shown (resetCharts() on every navigation).

const chartRedraws = new Set();
let resizeListening = false;

export function resetCharts() { chartRedraws.clear(); }

// Returns a container whose content is draw(width), drawn once attached to the page.
export function responsiveChart(className, draw) {
  const box = h('div', {class: `chart ${className || ''}`.trim()});
  let lastWidth = -1;
  const redraw = () => {
    if (!box.isConnected) return;
    const width = Math.max(240, Math.floor(box.clientWidth));
    if (width === lastWidth) return;
    lastWidth = width;
    clear(box).append(draw(width));
  };
  chartRedraws.add(redraw);
  requestAnimationFrame(redraw);
  if (!resizeListening) {
    resizeListening = true;
    window.addEventListener('resize', debounce(() => chartRedraws.forEach((f) => f()), 100));
  }
  return box;
}

// ---------------------------------------------------------------------------------------------
// Scales and ticks

export function linearScale(d0, d1, r0, r1) {
  const span = d1 - d0 || 1;
  const scale = (v) => r0 + ((v - d0) / span) * (r1 - r0);
  scale.range = [r0, r1];
  return scale;
}

// A tick step near max/count: 1, 2 or 5 × 10^k (× 1024^j for bytes, so labels read 256 MiB).
function niceStep(max, count, binary) {
  const raw = max / Math.max(1, count);
  let unit = 1;
  if (binary) while (raw / unit >= 1024) unit *= 1024;
  const scaledRaw = raw / unit;
  const power = 10 ** Math.floor(Math.log10(scaledRaw));
  const step = ([1, 2, 5, 10].find((m) => m * power >= scaledRaw) || 10) * power;
  return binary && step >= 1000 ? 1024 * unit : step * unit;  // 1 GiB, not 1000 MiB
}

// Ticks from 0 up to the first tick ≥ max.
export function niceTicks(max, count, binary) {
  if (!(max > 0)) return [0, 1];
  const step = niceStep(max, count, binary);
  const ticks = [];
  for (let i = 0; i * step < max * (1 - 1e-12); i++) ticks.push(i * step);
  ticks.push(ticks.length * step);
  return ticks;
}

// Multiples of a nice step that lie within [lo, hi].
function rangeTicks(lo, hi, count) {
  if (!(hi > lo)) return [lo];
  const step = niceStep(hi - lo, count, false);
  const ticks = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi; v += step) ticks.push(v);
  return ticks;
}

export function yAxis(ticks, y, x0, x1, format) {
  return svg('g', {class: 'axis y-axis'}, ticks.map((t) => svg('g', null,
    svg('line', {x1: x0, x2: x1, y1: y(t), y2: y(t), class: 'grid'}),
    svg('text', {x: x0 - 6, y: y(t) + 4, 'text-anchor': 'end'}, format(t)))));
}

// Labels near either end are anchored inwards so they stay inside the chart.
function xAxisTimes(ticks, x, y0, format) {
  const [left, right] = [x.range[0], x.range[1]];
  return svg('g', {class: 'axis x-axis'}, ticks.map((t) => {
    const px = x(t);
    const anchor = px - left < 30 ? 'start' : right - px < 30 ? 'end' : 'middle';
    return svg('g', null,
      svg('line', {x1: px, x2: px, y1: y0, y2: y0 + 4, class: 'tick'}),
      svg('text', {x: px, y: y0 + 16, 'text-anchor': anchor}, format(t)));
  }));
}

// Axis labels print zero as a bare "0" and drop trailing zeros ("4.00 GiB" → "4 GiB").
export function axisFormat(format) {
  return (v) => (v === 0 ? '0' : format(v).replace(/(\.\d*?)0+(?=\s|$)/, '$1').replace(/\.(?=\s|$)/, ''));
}

export function chartLegend(items) {
  return h('div', {class: 'legend'}, items.map(([label, color]) =>
    h('span', {class: 'legend-item'}, h('span', {class: 'swatch', style: `background:${color}`}), label)));
}

// ---------------------------------------------------------------------------------------------
// Device time: one stacked bar per device (compute | communication | memory | idle over the span)

// Widths (fractions of span) of the busy kinds. The kinds' unions may overlap one another, so
// when they add up to more than busy they share busy time in proportion.
function deviceSegments(device) {
  const span = num(device.span_ns);
  const busy = num(device.busy_ns);
  const kinds = ['compute', 'communication', 'memory'].map((k) => [k, num(device[`${k}_ns`])]);
  const kindSum = kinds.reduce((s, [, v]) => s + v, 0);
  if (!(span > 0)) return {segments: [], overlap: 0};
  const factor = kindSum > busy && kindSum > 0 ? busy / kindSum : 1;
  const segments = kinds.filter(([, v]) => v > 0).map(([k, v]) => [k, (v * factor) / span, v]);
  if (kindSum < busy) segments.push(['busy', (busy - kindSum) / span, busy - kindSum]);
  segments.push(['idle', num(device.idle_ns) / span, num(device.idle_ns)]);
  return {segments, overlap: Math.max(0, kindSum - busy)};
}

// "busy 12.3%": (100 × busy_ns / span_ns) rounded to one decimal (Python: f"{100 * busy / span:.1f}%").
function busyShareText(device) {
  const span = num(device.span_ns);
  return span > 0 ? `busy ${((100 * num(device.busy_ns)) / span).toFixed(1)}%` : 'busy –';
}

function deviceBar(device) {
  const {segments, overlap} = deviceSegments(device);
  const bar = h('div', {class: 'device-bar', role: 'img',
                        'aria-label': `${busyShareText(device)} of ${fmtDuration(device.span_ns)}`});
  for (const [kind, fraction, ns] of segments) {
    const share = num(device.span_ns) > 0 ? fmtPct(ns / num(device.span_ns)) : '';
    bar.append(h('div', {class: `seg seg-${kind}`,
                         style: `width:${(fraction * 100).toFixed(3)}%;background:${KIND_COLORS[kind]}`,
                         title: `${kind} ${fmtDuration(ns)} (${fmtInt(ns)} ns, ${share} of span)`}));
  }
  const detail = h('div', {class: 'device-detail'},
    [['span', device.span_ns], ['busy', device.busy_ns], ['idle', device.idle_ns],
     ['compute', device.compute_ns], ['communication', device.communication_ns],
     ['memory', device.memory_ns]].map(([label, ns]) =>
       h('span', {class: 'kv'}, h('span', {class: 'k'}, label), durationSpan(ns))),
    overlap > 0 ? h('span', {class: 'kv muted', title: 'The kinds ran at the same time for this long; ' +
                             'the bar splits busy time between them in proportion.'},
                    `kinds overlap ${fmtDuration(overlap)}`) : null);
  return h('div', {class: 'device-row', 'data-device': device.device},
    h('div', {class: 'device-name', title: device.device}, deviceLabel(device.device),
      h('small', null, `${fmtInt(num(device.events))} events`)),
    bar,
    h('div', {class: 'device-busy-share', title: `${fmtInt(num(device.busy_ns))} of ${fmtInt(num(device.span_ns))} ns`},
      busyShareText(device)),
    detail);
}

export function deviceLabel(device) {
  return /^\d+$/.test(String(device)) ? `Device ${device}` : String(device);
}

export function deviceBreakdownChart(devices) {
  return h('div', {class: 'device-breakdown'},
           chartLegend([['compute', KIND_COLORS.compute], ['communication', KIND_COLORS.communication],
                        ['memory', KIND_COLORS.memory], ['idle', KIND_COLORS.idle]]),
           devices.map(deviceBar));
}

// ---------------------------------------------------------------------------------------------
// Steps: one bar per step (duration), its device-busy part darker

export function stepsChart(steps) {
  return responsiveChart('steps-chart', (width) => {
    const height = 220;
    const m = {left: 64, right: 12, top: 14, bottom: 30};
    const maxDuration = Math.max(...steps.map((s) => num(s.duration_ns)), 1);
    const ticks = niceTicks(maxDuration, 4);
    const y = linearScale(0, ticks[ticks.length - 1], height - m.bottom, m.top);
    const band = (width - m.left - m.right) / steps.length;
    const barWidth = Math.max(1, Math.min(48, band * 0.72));
    const mean = steps.reduce((s, st) => s + num(st.duration_ns), 0) / steps.length;
    const labelEvery = Math.ceil(steps.length / Math.max(1, Math.floor((width - m.left) / 44)));
    const bars = steps.map((step, i) => {
      const x = m.left + i * band + (band - barWidth) / 2;
      const duration = num(step.duration_ns);
      const busy = Math.min(duration, num(step.device_busy_ns));
      const share = duration > 0 ? fmtPct(busy / duration) : '–';
      return svg('g', {class: 'step-bar'},
        svg('title', null, `step ${step.step}: ${fmtDuration(duration)} (${fmtInt(duration)} ns)\n` +
            `device busy ${fmtDuration(busy)} (${share}) · idle ${fmtDuration(step.device_idle_ns)}`),
        svg('rect', {x, width: barWidth, y: y(duration), height: Math.max(0, y(0) - y(duration)),
                     class: 'step-total'}),
        svg('rect', {x, width: barWidth, y: y(busy), height: Math.max(0, y(0) - y(busy)), class: 'step-busy'}),
        i % labelEvery === 0 ? svg('text', {x: x + barWidth / 2, y: height - m.bottom + 16,
                                            'text-anchor': 'middle', class: 'x-label'}, String(step.step)) : null);
    });
    return svg('svg', {width, height, class: 'chart-svg'},
      yAxis(ticks, y, m.left, width - m.right, axisFormat(fmtDuration)),
      bars,
      svg('line', {x1: m.left, x2: width - m.right, y1: y(mean), y2: y(mean), class: 'mean-line'}),
      svg('text', {x: width - m.right, y: y(mean) - 4, 'text-anchor': 'end', class: 'mean-label'},
          `mean ${fmtDuration(mean)}`),
      svg('line', {x1: m.left, x2: width - m.right, y1: y(0), y2: y(0), class: 'baseline'}));
  });
}

// ---------------------------------------------------------------------------------------------
// Memory: allocated bytes over time per device, drawn as a step line, peak marked

// Path of a step line through points (x, y in pixels), folding points that land on the same
// pixel column into one vertical stroke so 100k samples cost ~width path commands.
function stepLinePath(points, x, y) {
  let d = '';
  let column = null;
  let lo = 0;
  let hi = 0;
  let last = 0;
  const flush = () => {
    if (column !== null && hi !== lo) d += ` L${column},${y(lo).toFixed(1)} L${column},${y(hi).toFixed(1)}`;
    if (column !== null) d += ` L${column},${y(last).toFixed(1)}`;
  };
  for (const [t, v] of points) {
    const px = Math.round(x(t));
    if (px === column) {
      lo = Math.min(lo, v);
      hi = Math.max(hi, v);
      last = v;
      continue;
    }
    if (column === null) d = `M${px},${y(v).toFixed(1)}`;
    else {
      flush();
      d += ` L${px},${y(last).toFixed(1)}`;  // hold the last value until this sample (step-after)
    }
    column = px;
    lo = hi = last = v;
  }
  flush();
  return d;
}

// The time range [t0, t1] (ns from originNs) that holds every device's samples and peak, so
// the charts of one profile share their x axis.
export function memoryDomain(memories, originNs) {
  let t0 = Infinity;
  let t1 = -Infinity;
  for (const m of memories) {
    for (const p of m.timeline || []) {
      const t = num(p.ts_ns) - originNs;
      if (t < t0) t0 = t;
      if (t > t1) t1 = t;
    }
    if (m.peak_ns !== undefined) {
      t0 = Math.min(t0, num(m.peak_ns) - originNs);
      t1 = Math.max(t1, num(m.peak_ns) - originNs);
    }
  }
  return Number.isFinite(t0) ? [t0, Math.max(t1, t0 + 1)] : [0, 1];
}

export function memoryChart(memory, originNs, domain) {
  const points = (memory.timeline || []).map((p) => [num(p.ts_ns) - originNs, num(p.allocated_bytes)]);
  const peakT = num(memory.peak_ns) - originNs;
  const peak = num(memory.peak_bytes);
  return responsiveChart('memory-chart', (width) => {
    const height = 180;
    const m = {left: 72, right: 16, top: 24, bottom: 30};
    if (!points.length) return emptyBlock('No memory samples on this device.');
    const [t0, t1] = domain;
    const maxBytes = Math.max(peak, ...points.map((p) => p[1]), 1);
    const yTicks = niceTicks(maxBytes, 4, true);
    const x = linearScale(t0, t1, m.left, width - m.right);
    const y = linearScale(0, yTicks[yTicks.length - 1], height - m.bottom, m.top);
    const line = stepLinePath(points, x, y);
    const xTicks = rangeTicks(t0, t1, Math.max(2, Math.floor(width / 120)));
    const lastX = x(points[points.length - 1][0]);
    const area = `${line} L${lastX.toFixed(1)},${y(0)} L${x(points[0][0]).toFixed(1)},${y(0)} Z`;
    const peakX = x(peakT);
    const peakAnchor = peakX > width * 0.8 ? 'end' : peakX < m.left + 60 ? 'start' : 'middle';
    const hover = svg('g', {class: 'hover', visibility: 'hidden'},
                      svg('line', {y1: m.top, y2: height - m.bottom, class: 'hover-line'}),
                      svg('circle', {r: 3.5, class: 'hover-dot'}),
                      svg('text', {class: 'hover-text', y: m.top - 4}));
    const chartSvg = svg('svg', {width, height, class: 'chart-svg'},
      yAxis(yTicks, y, m.left, width - m.right, axisFormat(fmtBytes)),
      xAxisTimes(xTicks, x, height - m.bottom, axisFormat(fmtOffset)),
      svg('path', {d: area, class: 'mem-area'}),
      svg('path', {d: line, class: 'mem-line'}),
      svg('line', {x1: m.left, x2: width - m.right, y1: y(0), y2: y(0), class: 'baseline'}),
      svg('g', {class: 'peak-mark'},
        svg('title', null, `peak ${fmtBytes(peak)} (${fmtInt(peak)} bytes) at ${fmtOffset(peakT)}`),
        svg('circle', {cx: peakX, cy: y(peak), r: 4.5}),
        svg('text', {x: peakX, y: y(peak) - 9, 'text-anchor': peakAnchor}, `peak ${fmtBytes(peak)}`)),
      hover,
      svg('rect', {x: m.left, y: m.top, width: Math.max(0, width - m.left - m.right),
                   height: height - m.top - m.bottom, class: 'hover-target'}));
    attachMemoryHover(chartSvg, hover, points, x, y, m.left, width - m.right);
    return chartSvg;
  });
}

// Crosshair with the allocated bytes at the pointer's time.
function attachMemoryHover(chartSvg, hover, points, x, y, left, right) {
  const target = chartSvg.querySelector('.hover-target');
  target.addEventListener('mouseleave', () => hover.setAttribute('visibility', 'hidden'));
  target.addEventListener('mousemove', (event) => {
    const rect = chartSvg.getBoundingClientRect();
    const px = event.clientX - rect.left;
    let lo = 0;
    let hi = points.length - 1;
    while (lo < hi) {  // last point whose x ≤ px
      const mid = (lo + hi + 1) >> 1;
      if (x(points[mid][0]) <= px) lo = mid; else hi = mid - 1;
    }
    const [t, v] = points[lo];
    const [line, dot, text] = hover.children;
    line.setAttribute('x1', px);
    line.setAttribute('x2', px);
    dot.setAttribute('cx', px);
    dot.setAttribute('cy', y(v));
    text.setAttribute('x', Math.min(Math.max(px, left + 60), right - 60));
    text.setAttribute('text-anchor', 'middle');
    text.textContent = `${fmtOffset(t)}: ${fmtBytes(v)}`;
    hover.setAttribute('visibility', 'visible');
  });
}

// ---------------------------------------------------------------------------------------------
// Device samples: utilization over the capture window, one line per device

export function samplesChart(samples) {
  const byDevice = new Map();
  for (const s of samples) {
    if (!byDevice.has(s.device)) byDevice.set(s.device, []);
    byDevice.get(s.device).push(s);
  }
  const series = [...byDevice.entries()].map(([device, list], i) => ({
    device, color: SERIES_COLORS[i % SERIES_COLORS.length],
    points: list.map((s) => [num(s.sampled_at_ns), s.has_utilization ? Number(s.utilization_ratio) || 0 : null,
                             num(s.memory_total_bytes) > 0 ? num(s.memory_used_bytes) / num(s.memory_total_bytes) : null])
      .sort((a, b) => a[0] - b[0]),
  }));
  const allT = series.flatMap((s) => s.points.map((p) => p[0]));
  const t0 = Math.min(...allT);
  const t1 = Math.max(...allT, t0 + 1);
  const chart = responsiveChart('samples-chart', (width) => {
    const height = 170;
    const m = {left: 48, right: 16, top: 12, bottom: 30};
    const x = linearScale(t0, t1, m.left, width - m.right);
    const y = linearScale(0, 1, height - m.bottom, m.top);
    const xTicks = rangeTicks(0, t1 - t0, Math.max(2, Math.floor(width / 120)));
    const lines = series.flatMap((s) => [1, 2].map((field) => {
      const pts = s.points.filter((p) => p[field] !== null);
      if (!pts.length) return null;
      const d = pts.map((p, i) => `${i ? 'L' : 'M'}${x(p[0]).toFixed(1)},${y(p[field]).toFixed(1)}`).join(' ');
      return svg('path', {d, class: field === 1 ? 'util-line' : 'memutil-line', stroke: s.color},
                 svg('title', null, `${deviceLabel(s.device)} ${field === 1 ? 'utilization' : 'memory used'}`));
    }));
    return svg('svg', {width, height, class: 'chart-svg'},
      yAxis([0, 0.25, 0.5, 0.75, 1], y, m.left, width - m.right, (v) => `${Math.round(v * 100)}%`),
      xAxisTimes(xTicks.map((t) => t + t0), x, height - m.bottom, (t) => (t === t0 ? '0' : fmtOffset(t - t0))),
      lines);
  });
  return h('div', null,
           chartLegend(series.map((s) => [deviceLabel(s.device), s.color])),
           chart,
           h('p', {class: 'chart-note'}, 'Solid line: utilization; dashed line: memory used / total. ' +
             'Time is from the first sample.'));
}
