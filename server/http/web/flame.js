// Flame graphs (icicle: the root on top) from the API's Pyroscope layout
// (GET …/flamegraph?value=device_ns|host_self_ns|count): on the profile page, the job page and,
// as a diff of two profiles, the compare page. Click a frame to zoom into it, the root to zoom
// out; the search colours matching frames and adds up their share; hover shows exact values.

import {api, clear, debounce, emptyBlock, fitText, fmtDuration, fmtInt, fmtPct, h, loadingBlock, num, query, section, setQuery} from './core.js';

const FLAME = {row: 18, minPx: 0.4, font: '11px sans-serif'};
const FLAME_VALUES = [
  ['device_ns', 'Device time', 'Each kernel and copy booked under the host stack that launched it.'],
  ['host_self_ns', 'Host self time', 'Time a host frame spent outside its children on its thread.'],
  ['count', 'Event count', 'Events at each frame.'],
];

// Levels of groups of 4 (offset from the previous node's end on that level, total, self,
// name index) into nodes with absolute x, parents and path keys (for diffs).
function flameNodes(graph) {
  const names = graph.names || [];
  const levels = [];
  for (let l = 0; l < (graph.levels || []).length; ++l) {
    const values = graph.levels[l].values || [];
    const row = [];
    let end = 0;
    for (let i = 0; i + 3 < values.length; i += 4) {
      const x = end + num(values[i]);
      const node = {x, total: num(values[i + 1]), self: num(values[i + 2]), name: names[num(values[i + 3])] || '?', level: l,
                    parent: null};
      end = x + node.total;
      row.push(node);
    }
    // Parents: the node of the level above whose span holds this node's start (both sorted by x).
    if (l > 0) {
      const above = levels[l - 1];
      let p = 0;
      for (const node of row) {
        while (p + 1 < above.length && above[p].x + above[p].total <= node.x) ++p;
        node.parent = above[p] || null;
      }
    }
    for (const node of row) node.key = node.parent ? `${node.parent.key}\u001f${node.name}` : node.name;
    levels.push(row);
  }
  return levels;
}

function flameColor(name) {
  let hash = 0;
  for (let i = 0; i < name.length; ++i) hash = (hash * 31 + name.charCodeAt(i)) | 0;
  const hue = 10 + (Math.abs(hash) % 45);  // warm: red to yellow
  return `hsl(${hue}, 78%, ${60 + (Math.abs(hash >> 8) % 12)}%)`;
}

// Red where the target grew over the baseline, blue where it shrank, grey when unchanged.
function flameDiffColor(base, target) {
  if (!base) return 'hsl(0, 75%, 55%)';
  const change = (target - base) / base;
  if (Math.abs(change) < 0.02) return 'hsl(220, 8%, 78%)';
  const strength = Math.min(1, Math.abs(change));
  return change > 0 ? `hsl(0, ${40 + 40 * strength}%, ${78 - 22 * strength}%)`
                    : `hsl(215, ${40 + 40 * strength}%, ${78 - 22 * strength}%)`;
}

// A flame graph card. `urlFor(value)` is the flamegraph route for a value; with `baseUrlFor`,
// a diff: the target's frames, coloured by their change against the baseline's same stack.
export function createFlameGraph({title, explain, urlFor, baseUrlFor = null}) {
  const q = query();
  let value = FLAME_VALUES.some(([k]) => k === q.get('flame')) ? q.get('flame') : 'device_ns';
  const canvas = h('canvas', {class: 'flame-canvas', 'aria-label': 'flame graph'});
  const tooltip = h('div', {class: 'trace-tooltip hidden'});
  const status = h('span', {class: 'flame-status muted'});
  const search = h('input', {type: 'search', class: 'trace-search flame-search', placeholder: 'Highlight frames by name'});
  const select = h('select', {class: 'flame-value', 'aria-label': 'value'},
    FLAME_VALUES.map(([k, label]) => h('option', {value: k, selected: k === value}, label)));
  const reset = h('button', {class: 'btn', type: 'button'}, 'Reset zoom');
  const legend = baseUrlFor ? h('p', {class: 'explain flame-legend'},
    h('span', {class: 'swatch', style: `background:${flameDiffColor(100, 150)}`}), ' grew ',
    h('span', {class: 'swatch', style: `background:${flameDiffColor(100, 50)}`}), ' shrank ',
    h('span', {class: 'swatch', style: `background:${flameDiffColor(100, 100)}`}), ' same ',
    h('span', {class: 'swatch', style: `background:${flameDiffColor(0, 1)}`}), ' only in this profile') : null;
  const holder = h('div', {class: 'flame-holder'}, canvas, tooltip);
  const body = h('div', null, loadingBlock('Loading the flame graph…'));
  const element = section(title, explain,
    h('div', {class: 'trace-toolbar flame-toolbar'}, select, search, reset, status), legend, body);
  element.classList.add('flame-card');
  let levels = [], baseTotals = null, zoom = null, hover = null, matches = 0;

  async function load() {
    clear(body).append(loadingBlock('Loading the flame graph…'));
    let graph, base = null;
    try {
      [graph, base] = await Promise.all([api(urlFor(value)), baseUrlFor ? api(baseUrlFor(value)) : null]);
    } catch (err) {
      clear(body).append(emptyBlock(`Could not load the flame graph: ${err.message}`));
      return;
    }
    levels = flameNodes(graph);
    baseTotals = base ? new Map(flameNodes(base).flat().map((n) => [n.key, n.total])) : null;
    zoom = null;
    if (!levels.length || !levels[0].length || !levels[0][0].total) {
      clear(body).append(emptyBlock(value === 'device_ns' ? 'No device time in this profile.' : 'Nothing to show for this value.'));
      status.textContent = '';
      return;
    }
    clear(body).append(holder);
    element.dataset.loaded = String(Number(element.dataset.loaded || 0) + 1);
    draw();
  }

  const fmtValue = (v) => (value === 'count' ? `${fmtInt(v)} events` : `${fmtDuration(v)} (${fmtInt(v)} ns)`);
  const root = () => levels[0][0];
  const view = () => (zoom ? {x0: zoom.x, x1: zoom.x + zoom.total} : {x0: 0, x1: root().total});
  const isAncestor = (a, n) => { for (let p = n; p; p = p.parent) if (p === a) return true; return false; };

  function visible() {
    const out = [];
    const {x0, x1} = view();
    const width = canvas.clientWidth;
    const scale = width / Math.max(1, x1 - x0);
    for (const row of levels) {
      for (const n of row) {
        if (n.x + n.total <= x0 || n.x >= x1) continue;
        const left = Math.max(0, (n.x - x0) * scale), right = Math.min(width, (n.x + n.total - x0) * scale);
        if (right - left < FLAME.minPx) continue;
        if (zoom && n.level < zoom.level && !isAncestor(n, zoom)) continue;
        out.push({n, left, right, y: n.level * FLAME.row});
      }
    }
    return out;
  }

  function draw() {
    if (!levels.length) return;
    const dpr = window.devicePixelRatio || 1;
    const width = holder.clientWidth;
    if (!width) return;  // not laid out (hidden, or mid-resize): keep what is drawn
    const height = levels.length * FLAME.row + 4;
    canvas.width = Math.round(width * dpr);
    canvas.height = Math.round(height * dpr);
    canvas.style.width = `${width}px`;
    canvas.style.height = `${height}px`;
    const c = canvas.getContext('2d');
    c.setTransform(dpr, 0, 0, dpr, 0, 0);
    c.clearRect(0, 0, width, height);
    c.font = FLAME.font;
    c.textBaseline = 'middle';
    const needle = search.value.trim().toLowerCase();
    let matched = 0;
    const counted = new Set();
    for (const {n, left, right, y} of visible()) {
      const hit = needle && n.name.toLowerCase().includes(needle);
      // A frame's share counts once, whatever matching frames it holds further down.
      if (hit && ![...counted].some((a) => isAncestor(a, n))) { counted.add(n); matched += n.total; }
      c.fillStyle = needle && !hit ? '#d9dde4'
        : baseTotals ? flameDiffColor(baseTotals.get(n.key) || 0, n.total)
        : hit ? '#c026d3' : flameColor(n.name);
      c.fillRect(left, y + 1, Math.max(FLAME.minPx, right - left - 1), FLAME.row - 2);
      if (hover === n) { c.strokeStyle = '#1d2430'; c.strokeRect(left + 0.5, y + 1.5, Math.max(1, right - left - 2), FLAME.row - 3); }
      if (right - left > 36) {
        c.fillStyle = '#1d2430';
        const text = fitText(c, n.name, right - left - 6);
        if (text) c.fillText(text, left + 3, y + FLAME.row / 2);
      }
    }
    matches = matched;
    const total = root().total;
    status.textContent = (zoom ? `zoomed into ${zoom.name} (${fmtPct(zoom.total / total)}) · ` : '') +
      (needle ? `“${search.value.trim()}”: ${fmtValue(matched)}, ${fmtPct(matched / total)} of all` : `total ${fmtValue(total)}`);
  }

  function nodeAt(px, py) {
    const level = Math.floor(py / FLAME.row);
    return (visible().find((b) => b.n.level === level && px >= b.left && px < b.right) || {}).n || null;
  }

  canvas.addEventListener('mousemove', (event) => {
    const n = nodeAt(event.offsetX, event.offsetY);
    if (n !== hover) { hover = n; draw(); }
    if (!n) { tooltip.classList.add('hidden'); return; }
    const base = baseTotals ? baseTotals.get(n.key) || 0 : null;
    tooltip.textContent = `${n.name} · ${fmtValue(n.total)} · ${fmtPct(n.total / root().total)} of all` +
      (value !== 'count' ? ` · self ${fmtDuration(n.self)}` : '') +
      (base !== null ? ` · baseline ${fmtValue(base)}${base ? ` (${n.total >= base ? '+' : ''}${fmtPct((n.total - base) / base)})` : ', new'}` : '');
    tooltip.style.left = `${Math.min(event.offsetX + 14, holder.clientWidth - 300)}px`;
    tooltip.style.top = `${event.offsetY + 14}px`;
    tooltip.classList.remove('hidden');
  });
  canvas.addEventListener('mouseleave', () => { hover = null; tooltip.classList.add('hidden'); draw(); });
  canvas.addEventListener('click', (event) => {
    const n = nodeAt(event.offsetX, event.offsetY);
    if (!n) return;
    zoom = n.level === 0 || n === zoom ? null : n;
    draw();
  });
  reset.addEventListener('click', () => { zoom = null; draw(); });
  search.addEventListener('input', debounce(draw, 120));
  select.addEventListener('change', () => { value = select.value; setQuery({flame: value === 'device_ns' ? null : value}); load(); });
  window.addEventListener('resize', debounce(draw, 100));

  // For tests: what is drawn, where in the viewport (where a mouse event lands).
  element.flameBoxes = () => {
    const rect = canvas.getBoundingClientRect();
    return visible().map(({n, left, right, y}) => ({name: n.name, level: n.level, total: n.total, width: right - left,
      x: rect.left + (left + right) / 2, y: rect.top + y + FLAME.row / 2,
      base: baseTotals ? baseTotals.get(n.key) || 0 : undefined}));
  };
  element.flameState = () => ({value, zoom: zoom ? zoom.name : null, matched: matches, total: levels.length ? root().total : 0,
                               tooltip: tooltip.classList.contains('hidden') ? '' : tooltip.textContent});
  load();
  return element;
}
