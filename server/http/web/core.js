// fleetprof web app — core: DOM building, number/time formatting, the API client, the error
// banner and page state kept in the URL query string. Every other module imports from it; it
// imports only the generated route table.

import {ROUTES} from './generated-routes.js';

// ---------------------------------------------------------------------------------------------
// DOM building

const SVG_NS = 'http://www.w3.org/2000/svg';

export function appendChildren(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

function setAttributes(el, attrs) {
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') el.setAttribute('class', value);
    else if (key === 'text') el.textContent = value;
    else if (key === 'style') el.style.cssText = value;  // CSSOM, so a strict CSP allows it
    else if (key.startsWith('on') && typeof value === 'function') {
      el.addEventListener(key.slice(2), value);
    } else el.setAttribute(key, value === true ? '' : String(value));
  }
}

// h('a', {href: '/x', class: 'link'}, 'text', child…) → an HTML element.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  setAttributes(el, attrs);
  return appendChildren(el, children);
}

// Same for SVG elements.
export function svg(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  setAttributes(el, attrs);
  return appendChildren(el, children);
}

export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

// `text` cut (with …) to what fits in `width` pixels of canvas context `c`; '' when not even
// one letter does. (Trace viewer and flame graphs.)
export function fitText(c, text, width) {
  if (c.measureText(text).width <= width) return text;
  let lo = 0, hi = text.length;
  while (lo < hi) {  // the longest prefix that fits with the ellipsis
    const mid = (lo + hi + 1) >> 1;
    if (c.measureText(`${text.slice(0, mid)}…`).width <= width) lo = mid; else hi = mid - 1;
  }
  return lo > 0 ? `${text.slice(0, lo)}…` : '';
}

// ---------------------------------------------------------------------------------------------
// Exact integers. JSON numbers above 2^53 (absolute timestamps such as start_ns ≈ 1.7e18) lose
// precision as JS numbers. parseJson keeps the source digits of every such integer on the side
// (per object and key), so exactInt(obj, 'start_ns') gives a BigInt with the exact value while
// obj.start_ns stays a plain Number for display and charts.

const exactDigits = new WeakMap();

function parseJson(text) {
  return JSON.parse(text, function (key, value, context) {
    if (typeof value === 'number' && !Number.isSafeInteger(value) && context &&
        /^-?\d+$/.test(context.source)) {
      let digits = exactDigits.get(this);
      if (!digits) exactDigits.set(this, digits = {});
      digits[key] = context.source;
    }
    return value;
  });
}

// The exact value of obj[key] as a BigInt, or null when absent or not an integer.
export function exactInt(obj, key) {
  if (!obj) return null;
  const digits = exactDigits.get(obj);
  const raw = digits && key in digits ? digits[key] : obj[key];
  if (raw === undefined || raw === null || raw === '') return null;
  try {
    return BigInt(typeof raw === 'number' ? Math.trunc(raw) : raw);
  } catch (e) {
    return null;
  }
}

// A JSON integer (number, or a string if a server prints int64 as strings) as a Number.
export function num(value) {
  if (typeof value === 'number') return value;
  if (typeof value === 'bigint') return Number(value);
  if (typeof value === 'string' && value !== '') return Number(value);
  return 0;
}

// ---------------------------------------------------------------------------------------------
// Formatting: human units with 3 significant digits; the exact value goes into `title`.

function threeDigits(value) {
  const text = Math.abs(value) >= 1000 ? value.toFixed(0) : value.toPrecision(3);
  return text.includes('e') ? String(Number(text)) : text;
}

// Picks the largest unit not above |value| and prints 3 significant digits, moving up a unit
// when rounding reaches 1000 (999.7 µs → "1.00 ms").
function scaled(value, units) {
  const a = Math.abs(value);
  let i = units.length - 1;
  while (i > 0 && a < units[i][0]) i--;
  if (i < units.length - 1 && Math.abs(Number((value / units[i][0]).toPrecision(3))) >= 1000) i++;
  return `${threeDigits(value / units[i][0])} ${units[i][1]}`;
}

const DURATION_UNITS = [[1, 'ns'], [1e3, 'µs'], [1e6, 'ms'], [1e9, 's']];
const BYTE_UNITS = [[1, 'B'], [1024, 'KiB'], [1024 ** 2, 'MiB'], [1024 ** 3, 'GiB'],
                    [1024 ** 4, 'TiB'], [1024 ** 5, 'PiB']];
const SI_UNITS = [[1, ''], [1e3, 'k'], [1e6, 'M'], [1e9, 'G'], [1e12, 'T'], [1e15, 'P'], [1e18, 'E']];

export function fmtDuration(ns) {
  const v = num(ns);
  if (!Number.isFinite(v)) return '–';
  if (Math.abs(v) < 1000) return `${v} ns`;
  return scaled(v, DURATION_UNITS);
}

// A time offset with its sign: "+12.3 ms", "−4.00 µs".
export function fmtOffset(ns) {
  const v = num(ns);
  return v < 0 ? `−${fmtDuration(-v)}` : `+${fmtDuration(v)}`;
}

const INTEGER_FORMAT = new Intl.NumberFormat('en-US', {maximumFractionDigits: 0});

// 1234567 → "1,234,567" (Numbers and BigInts).
export function fmtInt(value) {
  if (value === null || value === undefined) return '–';
  return INTEGER_FORMAT.format(typeof value === 'bigint' ? value : num(value));
}

export function fmtBytes(bytes) {
  const v = num(bytes);
  if (Math.abs(v) < 1024) return `${v} B`;
  return scaled(v, BYTE_UNITS);
}

// A rate such as FLOP/s or B/s with SI prefixes: fmtRate(1.2e12, 'FLOP/s') → "1.20 TFLOP/s".
export function fmtRate(value, unit) {
  if (value === undefined || value === null || !Number.isFinite(Number(value))) return '–';
  return `${scaled(Number(value), SI_UNITS)}${unit}`;
}

// A ratio 0..1 as a percentage with one decimal: 0.12345 → "12.3%".
export function fmtPct(ratio) {
  if (!Number.isFinite(ratio)) return '–';
  return `${(ratio * 100).toFixed(1)}%`;
}

export function pad2(n) { return String(n).padStart(2, '0'); }

// Unix nanoseconds → "2024-04-04 03:51:35" in local time.
export function fmtDate(ns) {
  const ms = num(ns) / 1e6;
  if (!ms) return '–';
  const d = new Date(ms);
  if (Number.isNaN(d.getTime())) return '–';
  return `${d.getFullYear()}-${pad2(d.getMonth() + 1)}-${pad2(d.getDate())} ` +
         `${pad2(d.getHours())}:${pad2(d.getMinutes())}:${pad2(d.getSeconds())}`;
}

export function isoDate(ns) {
  const d = new Date(num(ns) / 1e6);
  return Number.isNaN(d.getTime()) ? '' : d.toISOString();
}

// Unix nanoseconds → "5 s ago", "3 min ago", …
export function fmtAgo(ns) {
  const ms = num(ns) / 1e6;
  if (!ms) return 'never';
  const s = Math.round((Date.now() - ms) / 1000);
  if (s < 0) return 'just now';
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} d ago`;
}

// Timestamps above ~1973 in ns look like unix time and are shown as dates; others are on a
// trace's own (monotonic) clock.
export function looksLikeUnixNs(ns) { return num(ns) > 1e17; }

export function exactTitle(obj, key) {
  const v = exactInt(obj, key);
  return v === null ? '' : `${fmtInt(v)} ns`;
}

// <span> with a duration in human units and the exact ns as tooltip.
export function durationSpan(ns, extraClass) {
  return h('span', {class: `num ${extraClass || ''}`.trim(), title: `${fmtInt(num(ns))} ns`},
           fmtDuration(ns));
}

export function bytesSpan(bytes) {
  return h('span', {class: 'num', title: `${fmtInt(num(bytes))} bytes`}, fmtBytes(bytes));
}

// An absolute time: a date when it looks like unix time, else seconds on the trace's own clock.
export function timestampSpan(obj, key) {
  const v = obj ? obj[key] : 0;
  if (!v) return h('span', {class: 'muted'}, '–');
  const unix = looksLikeUnixNs(v);
  const title = `${exactTitle(obj, key)}${unix ? ` · ${isoDate(v)}` : ' on the trace’s own clock'}`;
  return h('span', {class: 'num', title}, unix ? fmtDate(v) : `${(num(v) / 1e9).toFixed(3)} s`);
}

// The exact difference end − start (BigInt-safe) as a duration span.
export function spanBetween(obj, startKey, endKey) {
  const start = exactInt(obj, startKey);
  const end = exactInt(obj, endKey);
  if (start === null || end === null) return h('span', {class: 'muted'}, '–');
  const diff = end - start;
  return h('span', {class: 'num', title: `${fmtInt(diff)} ns`}, fmtDuration(Number(diff)));
}

// ---------------------------------------------------------------------------------------------
// Error banner and token prompt

export class ApiError extends Error {
  constructor(code, message, status) {
    super(message);
    this.code = code;
    this.status = status;
  }
}

export const HTTP_CODE_NAMES = {400: 'INVALID_ARGUMENT', 401: 'UNAUTHENTICATED', 403: 'PERMISSION_DENIED',
                                404: 'NOT_FOUND', 409: 'ALREADY_EXISTS', 429: 'RESOURCE_EXHAUSTED',
                                500: 'INTERNAL', 501: 'UNIMPLEMENTED', 503: 'UNAVAILABLE',
                                504: 'DEADLINE_EXCEEDED'};

function bannerElement() { return document.getElementById('banner'); }

export function clearBanner() {
  const banner = bannerElement();
  if (!banner) return;
  clear(banner);
  banner.className = 'banner hidden';
}

function displayBanner(message) {
  const banner = bannerElement();
  if (!banner) return;
  clear(banner);
  banner.className = 'banner error';
  banner.setAttribute('role', 'alert');
  // Icon and × are drawn by CSS, so the banner's text is exactly the message.
  banner.append(h('span', {class: 'banner-icon', 'aria-hidden': 'true'}),
                h('span', {class: 'banner-message'}, message),
                h('button', {class: 'banner-close', type: 'button', title: 'Dismiss', 'aria-label': 'Dismiss',
                             onclick: clearBanner}));
}

function errorText(err) {
  if (err instanceof ApiError) return `${err.code}: ${err.message}`;
  return `The page hit an internal error: ${err && err.message ? err.message : err}`;
}

// Shows an error in the banner at the top of the page. API errors are expected conditions;
// anything else is a bug in the page and also goes to the console.
export function showError(err, context) {
  if (!(err instanceof ApiError)) console.error(err);
  displayBanner(context ? `${context} — ${errorText(err)}` : errorText(err));
}

// For errors the browser already reported (uncaught exceptions, unhandled rejections).
export function showUncaughtError(err) { displayBanner(errorText(err)); }

export function readToken() {
  try { return sessionStorage.getItem('fleetprofToken') || ''; } catch (e) { return ''; }
}

function storeToken(token) {
  try { sessionStorage.setItem('fleetprofToken', token); } catch (e) { /* storage disabled */ }
}

let pendingTokenPrompt = null;

function lockIcon() {
  return svg('svg', {viewBox: '0 0 16 16', width: 16, height: 16, 'aria-hidden': 'true'},
             svg('rect', {x: 3, y: 7, width: 10, height: 7, rx: 1.5, fill: 'currentColor'}),
             svg('path', {d: 'M5 7V5a3 3 0 0 1 6 0v2', fill: 'none', stroke: 'currentColor', 'stroke-width': 1.6}));
}

// Asks for a bearer token (in #auth, above the error banner); resolves once the user submitted
// one. Concurrent requests that hit 401 share one prompt.
function askForToken(message) {
  if (pendingTokenPrompt) return pendingTokenPrompt;
  pendingTokenPrompt = new Promise((resolve) => {
    const box = document.getElementById('auth');
    const input = h('input', {type: 'password', id: 'token-input', placeholder: 'bearer token',
                              autocomplete: 'off', size: 40, 'aria-label': 'Bearer token'});
    const form = h('form', {class: 'token-form'},
      h('span', {class: 'banner-icon'}, lockIcon()),
      h('span', {class: 'banner-message'},
        message ? `That token was refused: ${message}. Enter another; it is kept for this browser tab only.`
                : 'This server needs a token. It is kept for this browser tab only.'),
      input, h('button', {type: 'submit', id: 'token-submit', class: 'btn primary'}, 'Use token'));
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      if (!input.value.trim()) return;
      storeToken(input.value.trim());
      pendingTokenPrompt = null;
      clear(box).className = 'banner hidden';
      updateTokenIndicator();
      resolve();
    });
    clear(box).className = 'banner auth';
    box.append(form);
    input.focus();
  });
  return pendingTokenPrompt;
}

// The "token · forget" note in the top bar while a token is stored.
export function updateTokenIndicator() {
  const slot = document.getElementById('token-indicator');
  if (!slot) return;
  clear(slot);
  if (!readToken()) return;
  slot.append(h('span', {class: 'muted'}, 'token set'), ' ',
    h('button', {type: 'button', class: 'link-button', id: 'token-forget', onclick: () => {
      try { sessionStorage.removeItem('fleetprofToken'); } catch (e) { /* storage disabled */ }
      updateTokenIndicator();
    }}, 'forget'));
}

// ---------------------------------------------------------------------------------------------
// The API client. Every request goes through here, so auth lives in one place.

// api(apiPath('CreateSchedule', {}, 'POST'), {method: 'POST', body: {...}}) → parsed JSON, or
// throws ApiError.
export async function api(path, options = {}) {
  for (;;) {
    const headers = Object.assign({Accept: 'application/json'}, options.headers || {});
    const token = readToken();
    if (token) headers.Authorization = `Bearer ${token}`;
    let body = options.body;
    if (body !== undefined && typeof body !== 'string') {
      body = JSON.stringify(body);
      headers['Content-Type'] = 'application/json';
    }
    let response;
    try {
      response = await fetch(path, Object.assign({}, options, {headers, body}));
    } catch (e) {
      throw new ApiError('UNAVAILABLE', `cannot reach the server (${e.message})`, 0);
    }
    const text = await response.text();
    let data = null;
    let parseFailed = false;
    if (text) {
      try { data = parseJson(text); } catch (e) { parseFailed = true; }
    }
    const error = data && typeof data === 'object' && data.error ? data.error : null;
    if (response.status === 401) {
      // Without a token the server's message is for CLI users; with one, it says what was wrong.
      await askForToken(token && error ? error.message : '');
      continue;
    }
    if (!response.ok) {
      const code = (error && error.code) || HTTP_CODE_NAMES[response.status] || `HTTP_${response.status}`;
      const message = (error && error.message) ||
                      `HTTP ${response.status} ${response.statusText} for ${path}`;
      throw new ApiError(code, message, response.status);
    }
    if (parseFailed) throw new ApiError('INTERNAL', `the server sent invalid JSON for ${path}`, response.status);
    return data;
  }
}

// ---------------------------------------------------------------------------------------------
// Page state in the URL

export function query() { return new URLSearchParams(location.search); }

// Applies {key: value} to the query string (null/'' removes, arrays repeat the key) and
// replaces (default) or pushes the history entry. Does not re-render.
export function setQuery(changes, push) {
  const q = query();
  for (const [key, value] of Object.entries(changes)) {
    q.delete(key);
    const values = Array.isArray(value) ? value : [value];
    for (const v of values) if (v !== null && v !== undefined && v !== '' && v !== false) q.append(key, v);
  }
  const search = q.toString();
  const url = location.pathname + (search ? `?${search}` : '');
  if (url !== location.pathname + location.search) history[push ? 'pushState' : 'replaceState'](null, '', url);
}

export function urlWith(path, params) {
  const q = new URLSearchParams();
  for (const [key, value] of Object.entries(params || {})) {
    const values = Array.isArray(value) ? value : [value];
    for (const v of values) if (v !== null && v !== undefined && v !== '') q.append(key, v);
  }
  const search = q.toString();
  return path + (search ? `?${search}` : '');
}

export function enc(s) { return encodeURIComponent(s); }

// The URL of API method `method` (its name in the protos, e.g. 'GetProfile'): the method's route
// (generated-routes.js) whose {fields} `params` gives, those filled in, the other params as the
// query. The app writes no API path itself, so a route changes in one place: its .proto.
export function apiPath(method, params = {}, verb = 'GET') {
  const candidates = (ROUTES[method] || []).filter((r) => r.verb === verb);
  const fields = (path) => [...path.matchAll(/\{([a-z_]+)\}/g)].map((m) => m[1]);
  const route = candidates.find((r) => fields(r.path).every((f) => params[f] !== undefined && params[f] !== null));
  if (!route) throw new Error(`no ${verb} route of ${method} takes ${Object.keys(params).join(', ') || 'no fields'}`);
  const query = Object.assign({}, params);
  const path = route.path.replace(/\{([a-z_]+)\}/g, (_, f) => {
    delete query[f];
    return enc(params[f]);
  });
  return urlWith(path, query);
}

// ---------------------------------------------------------------------------------------------
// Small shared widgets

export function section(title, explanation, ...body) {
  return h('section', {class: 'card'},
           h('div', {class: 'card-head'}, h('h2', null, title),
             explanation ? h('p', {class: 'explain'}, explanation) : null),
           body);
}

// A labelled figure in a .stat-row: "STEPS / 8".
export function stat(label, value) {
  return h('div', {class: 'stat'}, h('div', {class: 'stat-label'}, label), h('div', {class: 'stat-value'}, value));
}

export function loadingBlock(text) {
  return h('div', {class: 'loading'}, h('span', {class: 'spinner'}), text || 'Loading…');
}

// What a page shows in place of content it could not load (the banner says it too).
export function errorBlock(err, context) {
  return h('div', {class: 'error-block'},
    h('h2', null, context || 'Something went wrong'),
    h('p', {class: 'mono'}, errorText(err)),
    h('p', null, h('a', {href: '/profiles'}, '← All profiles')));
}

export function emptyBlock(content) { return h('div', {class: 'empty'}, content); }

export function badge(state) {
  const s = String(state || 'UNKNOWN');
  return h('span', {class: `badge badge-${s.toLowerCase()}`}, s);
}

export function labelChips(labels) {
  const entries = Object.entries(labels || {});
  if (!entries.length) return h('span', {class: 'muted'}, '–');
  return h('span', {class: 'chips'},
           entries.sort(([a], [b]) => a.localeCompare(b))
             .map(([k, v]) => h('span', {class: 'chip', title: `${k}=${v}`}, h('b', null, k), '=', v)));
}

export function debounce(fn, ms) {
  let timer = null;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}
