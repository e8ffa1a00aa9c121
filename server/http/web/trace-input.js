// fleetprof web app — trace viewer, input: keys (W/S zoom, A/D pan, 0 all, Esc drops the
// selection), the mouse (drag pans, Shift+drag selects, click shows an event or folds a rank,
// Ctrl+wheel zooms, hover shows a tooltip), the search box and window resizes.

import {debounce, fmtDuration, fmtInt, setQuery} from './core.js';
import {clearRange, showDetails, showRange} from './trace-details.js';
import {draw} from './trace-draw.js';
import {TRACE, computeLayout, hit, timeAt} from './trace-layout.js';
import {pan, zoom, zoomTo} from './trace-nav.js';

// Listens on the canvas, the window and the search box (stops acting once the page is left).
export function attachInput(tv, searchBox) {
  const {v, job, page, canvas, tooltip} = tv;
  let drag = null;
  canvas.addEventListener('mousedown', (event) => {
    const px = event.offsetX;
    if (px < TRACE.labelWidth && !job) return;
    drag = {x: px, s: v.s, e: v.e, t: timeAt(tv, px), moved: false, select: event.shiftKey};
    canvas.focus();
  });
  window.addEventListener('mousemove', (event) => {
    if (!drag || !page.alive()) return;
    const px = event.clientX - canvas.getBoundingClientRect().left;
    if (Math.abs(px - drag.x) > 3) drag.moved = true;
    if (!drag.moved) return;
    if (drag.select) {
      const t = timeAt(tv, px);
      v.range = {s: Math.min(drag.t, t), e: Math.max(drag.t, t)};
      draw(tv);
    } else {
      const dt = ((px - drag.x) / (canvas.clientWidth - TRACE.labelWidth)) * (drag.e - drag.s);
      v.s = drag.s - dt; v.e = drag.e - dt;
      draw(tv);
      tv.fetchSoon();
    }
  });
  window.addEventListener('mouseup', (event) => {
    if (!drag || !page.alive()) return;
    const d = drag;
    drag = null;
    if (d.moved) {
      if (d.select && v.range) showRange(tv);
      else zoomTo(tv, v.s, v.e);
      return;
    }
    const rect = canvas.getBoundingClientRect();
    const py = event.clientY - rect.top;
    const heading = job && tv.layout.find((l) => l.rankHeading && py >= l.y && py < l.y + TRACE.groupHead);
    if (heading) {
      if (v.collapsed.has(heading.rank)) v.collapsed.delete(heading.rank); else v.collapsed.add(heading.rank);
      computeLayout(tv);
      draw(tv);
      return;
    }
    const found = hit(tv, event.clientX - rect.left, py);
    if (found && found.event) showDetails(tv, found);
    else if (found && found.merged) {
      zoomTo(tv, found.merged.s - (found.merged.e - found.merged.s) * 0.1, found.merged.e + (found.merged.e - found.merged.s) * 0.1);
    }
  });
  canvas.addEventListener('mousemove', (event) => {
    tv.mouseX = event.offsetX;
    const found = hit(tv, event.offsetX, event.offsetY);
    if (!found) { tooltip.classList.add('hidden'); return; }
    tooltip.textContent = found.event ? `${found.event.name} · ${fmtDuration(found.event.d)}`
      : `${fmtInt(found.merged.count)} events shorter than a pixel · click to zoom in`;
    tooltip.style.left = `${event.offsetX + 14}px`;
    tooltip.style.top = `${event.offsetY + 14}px`;
    tooltip.classList.remove('hidden');
  });
  canvas.addEventListener('mouseleave', () => { tv.mouseX = null; tooltip.classList.add('hidden'); });
  canvas.addEventListener('wheel', (event) => {
    if (event.ctrlKey || event.metaKey) {
      event.preventDefault();
      zoom(tv, event.deltaY > 0 ? 1.2 : 1 / 1.2, timeAt(tv, event.offsetX));
    } else if (event.shiftKey || Math.abs(event.deltaX) > Math.abs(event.deltaY)) {
      event.preventDefault();
      pan(tv, (event.deltaX || event.deltaY) > 0 ? 0.1 : -0.1);
    }
  }, {passive: false});
  window.addEventListener('resize', () => { if (page.alive()) { draw(tv); tv.fetchSoon(); } });

  searchBox.addEventListener('input', debounce(() => {
    v.search = searchBox.value.trim();
    setQuery({search: v.search});
    tv.fetchSoon();
  }, 250));
}

// The viewer's keys, on the whole document until the page is left.
export function listenToKeys(tv) {
  const {v, page} = tv;
  function onKey(event) {
    if (!page.alive()) { document.removeEventListener('keydown', onKey); return; }
    if (event.target && (event.target.tagName === 'INPUT' || event.target.tagName === 'TEXTAREA')) return;
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const center = tv.mouseX !== null ? timeAt(tv, tv.mouseX) : undefined;
    const k = event.key.toLowerCase();
    if (k === 'w') zoom(tv, 0.8, center);
    else if (k === 's') zoom(tv, 1.25, center);
    else if (k === 'a') pan(tv, -0.15);
    else if (k === 'd') pan(tv, 0.15);
    else if (k === '0') zoomTo(tv, 0, tv.total);
    else if (k === 'escape') clearRange(tv);
    else return;
    event.preventDefault();
  }
  document.addEventListener('keydown', onKey);
}
