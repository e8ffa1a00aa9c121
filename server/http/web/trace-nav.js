// fleetprof web app — trace viewer, navigation: moving the view (zoom, pan, show a range),
// which goes into the URL (?from=&to=), redraws at once and loads the new window soon after.

import {setQuery} from './core.js';
import {draw} from './trace-draw.js';

export function zoomTo(tv, s, e) {
  const {v, total} = tv;
  const minSpan = 100;
  if (e - s < minSpan) { const mid = (s + e) / 2; s = mid - minSpan / 2; e = mid + minSpan / 2; }
  const span = e - s;
  if (span > total * 1.2) { s = -total * 0.1; e = total * 1.1; }
  v.s = s; v.e = e;
  setQuery({from: Math.round(s), to: Math.round(e), start_ns: null, end_ns: null});
  draw(tv);
  tv.fetchSoon();
}

// Zooms by `factor` (< 1: in) around `center` (default: the middle of the view).
export function zoom(tv, factor, center) {
  const {v} = tv;
  const c0 = center === undefined ? (v.s + v.e) / 2 : center;
  zoomTo(tv, c0 - (c0 - v.s) * factor, c0 + (v.e - c0) * factor);
}

// Moves the view by `fraction` of its span (< 0: earlier).
export function pan(tv, fraction) {
  const {v} = tv;
  const d = (v.e - v.s) * fraction;
  zoomTo(tv, v.s + d, v.e + d);
}
