// fleetprof web app — the fleet page's accounting (/fleet, above the agents): where the fleet's
// device-time went in the last 24 h, estimated from the sampled profiles (GET FleetTop: each
// row's estimate with its 95% interval, share and samples; busy and idle totals), the sampling
// policy that feeds it, and the newest regressions.

import {api, apiPath, appendChildren, clear, emptyBlock, enc, fmtAgo, fmtDuration, fmtInt, fmtPct, h, isoDate, loadingBlock, num, stat} from './core.js';

const TOP_ROWS = 10;
const REGRESSION_ROWS = 8;
const HOUR_NS = 3600e9;

// Device-time as a fleet owner reads it: device-hours past an hour, else a duration.
const DEVICE_UNITS = [[1, 'ns'], [1e3, 'µs'], [1e6, 'ms'], [1e9, 's'], [HOUR_NS, 'device-h']];

function unitOf(ns) {
  const v = Math.abs(num(ns));
  return DEVICE_UNITS.reduce((best, u) => (v >= u[0] ? u : best), DEVICE_UNITS[0]);
}

function inUnit(ns, [scale, name]) {
  const v = num(ns) / scale;
  return `${scale === 1 ? fmtInt(v) : v.toFixed(v >= 100 ? 1 : 2)} ${name}`;
}

export function fmtDeviceTime(ns) { return inUnit(ns, unitOf(ns)); }

// "1.20 – 3.40 device-h": both ends in the unit of the higher one.
function fmtInterval(low, high) {
  const unit = unitOf(high);
  return `${inUnit(low, unit).split(' ')[0]} – ${inUnit(high, unit)}`;
}

// One FleetTop row; the share as a bar; the 95% interval as low – high.
function topRow(row, by) {
  const share = Number(row.share) || 0;
  const name = by === 'job' ? h('a', {href: `/jobs/${enc(row.name)}`}, row.name) : row.name;
  return h('tr', {class: 'fleet-top-row', 'data-name': row.name},
    h('td', {class: 'fleet-top-name', title: row.name}, name),
    h('td', {class: 'num'}, fmtDeviceTime(row.device_ns)),
    h('td', {class: 'num muted', title: `${fmtInt(row.ci95_low_ns)} – ${fmtInt(row.ci95_high_ns)} ns`},
      fmtInterval(row.ci95_low_ns, row.ci95_high_ns)),
    h('td', {class: 'num'}, h('span', {class: 'meter'},
      h('span', {class: 'meter-fill', style: `width:${(100 * Math.min(1, Math.max(0, share))).toFixed(1)}%`})),
      ' ', fmtPct(share)),
    h('td', {class: 'num'}, fmtInt(row.samples)));
}

function topTable(title, answer) {
  const rows = (answer && answer.rows) || [];
  return h('div', {class: 'fleet-top', 'data-by': answer.by},
    h('h3', null, title),
    rows.length ? h('div', {class: 'table-scroll'}, h('table', {class: 'data-table fleet-top-table'},
      h('thead', null, h('tr', null, ['Name', 'Device-time', '95% interval', 'Share', 'Samples']
        .map((t) => h('th', {scope: 'col', class: t === 'Name' ? null : 'num'}, t)))),
      h('tbody', null, rows.map((r) => topRow(r, answer.by)))))
      : emptyBlock('No rows in the window (no sampled profile has any).'));
}

function totals(answer) {
  const total = num(answer.total_device_ns);
  const share = (part) => (total > 0 ? ` (${fmtPct(num(part) / total)})` : '');
  return h('div', {class: 'stat-row fleet-totals'},
    stat('sampled profiles', fmtInt(answer.samples)),
    stat('device-time', fmtDeviceTime(total)),
    stat('busy', `${fmtDeviceTime(answer.busy_device_ns)}${share(answer.busy_device_ns)}`),
    stat('idle', h('span', {class: 'fleet-idle'}, `${fmtDeviceTime(answer.idle_device_ns)}${share(answer.idle_device_ns)}`)));
}

function samplingLine(status) {
  if (!status || !status.enabled) {
    return h('p', {class: 'fleet-sampling muted'}, 'Sampling off: ',
      h('code', null, 'fleetprof sampling set --every 10m --duration_ms 2000 --max_overhead 1%'), ' starts it.');
  }
  const every = num(status.every_ms) / 1000;
  return h('p', {class: 'fleet-sampling'}, h('b', null, 'Sampling on'),
    `: every ${every >= 60 ? `${(every / 60).toFixed(every % 60 ? 1 : 0)} min` : `${every} s`}, ` +
    `${fmtInt(status.duration_ms)} ms captures within ${fmtPct(Number(status.max_overhead) || 0)} of the fleet's ` +
    `device-time; periods ${fmtInt(status.periods)}, captures ${fmtInt(status.captures)}, ` +
    `skipped (target busy) ${fmtInt(status.skipped_busy)}; overhead in the last hour ${fmtPct(Number(status.overhead_last_hour) || 0)}.`);
}

function regressionsTable(list) {
  const records = ((list && list.regressions) || []).slice(0, REGRESSION_ROWS);
  if (!records.length) return emptyBlock('No regression found.');
  return h('div', {class: 'table-scroll'}, h('table', {class: 'data-table fleet-regressions'},
    h('thead', null, h('tr', null, ['Found', 'Job', 'What', 'Baseline', 'Now', 'Change']
      .map((t) => h('th', {scope: 'col', class: ['Baseline', 'Now', 'Change'].includes(t) ? 'num' : null}, t)))),
    h('tbody', null, records.map((r) => h('tr', {class: 'fleet-regression-row'},
      h('td', {class: 'num', title: isoDate(r.detected_ns)}, fmtAgo(r.detected_ns)),
      h('td', null, h('a', {href: `/jobs/${enc(r.job)}`}, r.job)),
      h('td', null, h('a', {href: `/profiles/${enc(r.profile_id)}`}, r.what === 'step_time' ? 'step time' : `${r.what} ${r.name}`)),
      h('td', {class: 'num'}, fmtDuration(r.baseline_ns)),
      h('td', {class: 'num'}, fmtDuration(r.now_ns)),
      h('td', {class: 'num'}, `+${fmtPct(Number(r.change) || 0)}`))))));
}

// A failed part says so in its place; the others still show.
async function settled(promise) {
  try { return {value: await promise}; } catch (err) { return {error: err}; }
}

function failed(what, err) {
  return h('div', {class: 'empty fleet-part-error'}, `${what} could not be loaded: ${(err && err.message) || err}`);
}

// The accounting card: loads once per visit (the rollups change by the hour).
export function fleetAccountingCard(page) {
  const body = h('div', null, loadingBlock('Loading the fleet\'s device-time…'));
  const card = h('section', {class: 'card fleet-accounting'},
    h('div', {class: 'card-head'}, h('h2', null, 'Device-time, last 24 h'),
      h('p', {class: 'explain'}, 'Estimated from the sampled profiles: each profile\'s exact shares times the ' +
        'device-time it stands for, with 95% confidence intervals. Idle is device-time with nothing running.')),
    body);
  const top = (by) => api(apiPath('FleetTop', {by, limit: TOP_ROWS}));
  Promise.all([top('kernel'), top('op'), top('job')].map(settled)
    .concat([settled(api(apiPath('GetSampling'))), settled(api(apiPath('ListRegressions')))]))
    .then(([kernels, ops, jobs, sampling, regressions]) => {
      if (!page.alive()) return;
      const part = (r, title, render) => (r.error ? failed(title, r.error) : render(r.value));
      const nothing = !kernels.error && !num(kernels.value.samples);
      appendChildren(clear(body), [
        sampling.error ? failed('Sampling status', sampling.error) : samplingLine(sampling.value),
        nothing ? emptyBlock('No sampled profile in the last 24 h: the estimates start with the first one.')
          : [part(kernels, 'Totals', totals),
            h('div', {class: 'fleet-top-grid'},
              part(kernels, 'Top kernels', (v) => topTable('Top kernels', v)),
              part(ops, 'Top ops', (v) => topTable('Top ops', v)),
              part(jobs, 'Top jobs', (v) => topTable('Top jobs', v)))],
        h('h3', null, 'Recent regressions'),
        part(regressions, 'Regressions', regressionsTable)]);
    });
  return card;
}
