// fleetprof web app — trace viewer, details: the panel of the clicked event (its arguments,
// the runtime call or kernels it is linked to by correlation id, and in a job window the same
// collective on every rank), and the panel of a Shift+drag selection.

import {api, apiPath, clear, emptyBlock, enc, exactInt, fmtDuration, fmtInt, fmtOffset, h, loadingBlock, num, showError, stat, urlWith} from './core.js';
import {draw} from './trace-draw.js';
import {TRACE, keyOf, offsetOf, toAbs} from './trace-layout.js';
import {zoomTo} from './trace-nav.js';

// Selects an event ({track, event}) and fills the details panel.
export async function showDetails(tv, sel) {
  const {v, job, page, details} = tv;
  v.selected = sel;
  draw(tv);
  const e = sel.event;
  // Arguments and linked events come from the event's own profile, on its own clock.
  const own = job && sel.track.profile_id
    ? {trace: apiPath('GetTraceWindow', {profile_id: sel.track.profile_id}), shift: job.offsets.get(sel.track.profile_id) || 0n}
    : {trace: tv.urls.trace, shift: 0n};
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
  if (job && sel.track.kind === 'device') showCollective(tv, sel, collective);
  else if (v.highlight) { v.highlight = null; draw(tv); }
  const ownStart = exactInt(e.raw, 'start_ns') - own.shift;
  const args = new URLSearchParams({start_ns: ownStart.toString(),
    end_ns: (ownStart + 1n).toString(), resolution_ns: '1', args: '1', track: sel.track.id});
  const one = await api(`${own.trace}?${args}`).catch(() => null);
  if (!page.alive() || v.selected !== sel) return;
  const match = one && one.tracks[0] && one.tracks[0].events.find((x2) => x2.name === e.name && num(x2.dur_ns) === e.d);
  if (match && match.args) {
    if (match.args.category) list.append(h('dt', null, 'Category'), h('dd', {class: 'trace-event-cat'}, match.args.category));
    if (match.args.kind) list.append(h('dt', null, 'Kind'), h('dd', null, match.args.kind));
  }
  if (e.corr === undefined) return;
  links.append(loadingBlock(sel.track.kind === 'device' ? 'Looking for the launching call…' : 'Looking for launched kernels…'));
  const flow = new URLSearchParams({correlation: String(e.corr), resolution_ns: '1',
    start_ns: (BigInt(toAbs(tv, Math.max(0, e.s - TRACE.flowWindowNs))) - own.shift).toString(),
    end_ns: (BigInt(toAbs(tv, Math.min(tv.total, e.s + e.d + TRACE.flowWindowNs))) - own.shift).toString()});
  const linked = await api(`${own.trace}?${flow}`).catch(() => null);
  if (!page.alive() || v.selected !== sel) return;
  clear(links);
  const others = [];
  for (const t0 of (linked ? linked.tracks : [])) {
    const t = job ? Object.assign({}, t0, {profile_id: sel.track.profile_id, rank: sel.track.rank}) : t0;
    for (const ev0 of t.events) {
      const ev = own.shift ? Object.assign({}, ev0, {start_ns: (exactInt(ev0, 'start_ns') + own.shift).toString()}) : ev0;
      if (t.id === sel.track.id && offsetOf(tv, ev, 'start_ns') === e.s) continue;
      others.push([t, ev]);
    }
  }
  if (!others.length) { links.append(h('p', {class: 'muted'}, 'No other event shares this correlation id nearby.')); return; }
  links.append(h('h3', null, sel.track.kind === 'device' ? 'Launched by' : 'Launches'));
  for (const [t, ev] of others.slice(0, 20)) {
    links.append(h('button', {class: 'btn trace-jump', type: 'button', onclick: () => jumpTo(tv, keyOf(t), ev)},
      `${t.kind === 'device' ? 'kernel' : 'call'} ${ev.name.slice(0, 60)} · ${fmtDuration(num(ev.dur_ns))} on ${t.id}`));
  }
}

// After a jump: selects the event once a loaded window holds it.
export function selectPending(tv) {
  const {v} = tv;
  const p = v.pendingSelect;
  const d = p && v.data.get(p.trackId);
  const e = d && d.events.find((x2) => x2.s === p.s && x2.d === p.d && x2.name === p.name);
  if (!e) return;
  v.pendingSelect = null;
  showDetails(tv, {track: tv.tracks.find((t) => keyOf(t) === p.trackId), event: e});
}

// A job's collective: the same instance on every rank, highlighted, with each rank's wait.
// The job's matched instances are fetched once (tv.collectives).
async function showCollective(tv, sel, box) {
  const {v, job} = tv;
  if (!tv.collectives) {
    box.append(loadingBlock('Matching this collective across ranks…'));
    tv.collectives = await api(job.collectives).catch((err) => ({error: err}));
    if (!tv.page.alive() || v.selected !== sel) return;
    clear(box);
  }
  const collectives = tv.collectives;
  const start = exactInt(sel.event.raw, 'start_ns');
  const instance = (collectives.collectives || []).find((c) => c.ranks.some((r) =>
    r.profile_id === sel.track.profile_id && exactInt(r, 'start_ns') === start));
  if (!instance) {
    if (v.highlight) { v.highlight = null; draw(tv); }
    if (collectives.error) box.append(h('p', {class: 'muted'}, `Collectives could not be matched: ${collectives.error.message}`));
    return;
  }
  v.highlight = new Set(instance.ranks.map((r) => `${r.profile_id}|${exactInt(r, 'start_ns')}`));
  draw(tv);
  box.append(h('h3', null, `${instance.op} #${instance.seq} on ${instance.ranks.length} ranks`),
    h('p', {class: 'explain'}, instance.last_rank ? `Rank ${instance.last_rank} arrived last; the others waited for it.`
      : 'No rank arrived later than the others by more than the clocks\' uncertainty.'),
    h('table', {class: 'data-table trace-collective-table'},
      h('thead', null, h('tr', null, h('th', null, 'Rank'), h('th', {class: 'num'}, 'Start'), h('th', {class: 'num'}, 'End'),
        h('th', {class: 'num'}, 'Waited'))),
      h('tbody', null, instance.ranks.map((r) => h('tr', {class: r.rank === instance.last_rank ? 'trace-last-rank' : ''},
        h('td', null, r.rank), h('td', {class: 'num'}, fmtOffset(Number(exactInt(r, 'start_ns') - tv.origin))),
        h('td', {class: 'num'}, fmtOffset(Number(exactInt(r, 'end_ns') - tv.origin))),
        h('td', {class: 'num'}, fmtDuration(num(r.wait_ns))))))));
}

// Shows a linked event (from the details' links): zooms around it and selects it.
function jumpTo(tv, trackId, ev) {
  const s = offsetOf(tv, ev, 'start_ns'), d = num(ev.dur_ns);
  const span = Math.max(d * 8, 20000);
  tv.v.pendingSelect = {trackId, s, d, name: ev.name};
  zoomTo(tv, s + d / 2 - span / 2, s + d / 2 + span / 2);
  selectPending(tv);  // the loaded window may hold it already; else the next load selects it
}

// ---- range selection ----

// The panel of the Shift+drag selection tv.v.range: what ran inside it.
export async function showRange(tv) {
  const {v, job, rangePanel} = tv;
  const r = v.range;
  if (job) {  // range totals are a profile's: each rank's own trace has them
    rangePanel.classList.remove('hidden');
    clear(rangePanel).append(h('div', {class: 'card-head'}, h('h2', null, `Selection · ${fmtDuration(r.e - r.s)}`),
      h('p', {class: 'explain'}, 'Totals of a selection are per profile: open a rank\'s own trace.')),
      h('div', {class: 'link-row'}, job.ranks.map((p) => h('a', {class: 'btn', href: urlWith(`/profiles/${enc(p.profile_id)}/trace`,
        {start_ns: (BigInt(toAbs(tv, r.s)) - (job.offsets.get(p.profile_id) || 0n)).toString(),
         end_ns: (BigInt(toAbs(tv, r.e)) - (job.offsets.get(p.profile_id) || 0n)).toString()})}, `Rank ${p.rank}`))));
    return;
  }
  rangePanel.classList.remove('hidden');
  clear(rangePanel).append(h('div', {class: 'card-head'}, h('h2', null, `Selection · ${fmtDuration(r.e - r.s)}`),
    h('p', {class: 'explain'}, 'Time of each name inside the selection (events cut at its edges count only their part inside).')),
    loadingBlock('Adding up the selection…'));
  const params = new URLSearchParams({start_ns: toAbs(tv, r.s), end_ns: toAbs(tv, r.e), limit: '15'});
  const out = await api(`${tv.urls.range}?${params}`).catch((err) => { showError(err); return null; });
  if (!out || !tv.page.alive() || v.range !== r) return;
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
      h('button', {class: 'btn', type: 'button', onclick: () => zoomTo(tv, r.s, r.e)}, 'Zoom to selection'),
      h('button', {class: 'btn', type: 'button', onclick: () => clearRange(tv)}, 'Clear')),
    h('h3', null, 'Kernels'), table(out.kernels, 'Kernel'), h('h3', null, 'Host events'), table(out.host, 'Host'));
}

// Drops the selection and hides its panel.
export function clearRange(tv) {
  tv.v.range = null;
  tv.rangePanel.classList.add('hidden');
  draw(tv);
}
