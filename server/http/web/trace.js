// fleetprof web app — the trace viewer (/profiles/{id}/trace, /jobs/{job}/trace). A canvas
// timeline of one profile's stored events: device streams, host threads and memory counters,
// grouped by device and process. It asks the server for the window on screen at one-pixel
// resolution (GET …/trace), so it draws every event wider than a pixel exactly and the rest as
// merged blocks, whatever the size of the profile. Times on screen are offsets from the
// profile's first event; the exact trace-clock ns (BigInt) are kept for requests and details.
//
// This module has the two pages and puts the viewer together; its parts are modules of their
// own: trace-layout.js (geometry), trace-data.js (fetching), trace-draw.js (drawing),
// trace-nav.js (moving the view), trace-input.js (keys and mouse), trace-details.js (the
// details and selection panels) and trace-export.js (download, Perfetto). They share one
// state object, `tv`, made here.

import {api, apiPath, clear, debounce, emptyBlock, enc, exactInt, fmtInt, h, loadingBlock, num, query} from './core.js';
import {fetchView} from './trace-data.js';
import {selectPending} from './trace-details.js';
import {draw} from './trace-draw.js';
import {attachExport} from './trace-export.js';
import {attachInput, listenToKeys} from './trace-input.js';
import {TRACE, computeLayout, keyOf, xOf} from './trace-layout.js';
import {zoomTo} from './trace-nav.js';

export async function renderTracePage(page, profileId) {
  const scope = {profile_id: profileId};
  const head = h('section', {class: 'card trace-head'}, loadingBlock('Loading the profile…'));
  page.main.append(head);
  const [info, steps, first] = await Promise.all([
    page.load(api(apiPath('GetProfile', scope)), head, 'Could not load the profile'),
    api(apiPath('StepBreakdown', scope)).catch(() => ({steps: []})),
    page.load(api(apiPath('GetTraceWindow', Object.assign({max_events_per_track: 1}, scope))), head, 'Could not load the trace'),
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
  const urls = {trace: apiPath('GetTraceWindow', scope), range: apiPath('GetRangeBreakdown', scope),
                export: apiPath('ExportProfile', scope)};
  const viewer = createTraceViewer(page, profileId, urls, first, (steps && steps.steps) || []);
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
// on the lowest rank's clock (docs/using.md, Job timeline).
export async function renderJobTracePage(page, jobName) {
  const q = query();
  const capture = q.get('capture') || q.get('capture_id') || '';
  const profiles = q.getAll('profile');
  const jobTrace = apiPath('JobTrace', {job: jobName});
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
  const first = await page.load(api(`${jobTrace}?${selection}&max_events_per_track=1`), head, 'Could not load the job\'s trace');
  if (!first || !page.alive()) return;
  const reference = first.profiles.find((p) => p.reference) || first.profiles[0];
  const steps = reference ? await api(apiPath('StepBreakdown', {profile_id: reference.profile_id})).catch(() => ({steps: []})) : {steps: []};
  if (!first.tracks.length) {
    clear(head).append(h('h1', null, 'Job trace ', h('span', {class: 'mono'}, jobName)),
      emptyBlock('These profiles have no events to show.'));
    return;
  }
  const offsets = new Map(first.profiles.map((p) => [p.profile_id, exactInt(p, 'clock_offset_ns') || 0n]));
  const job = {selection, offsets, ranks: first.profiles, collectives: `${apiPath('JobCollectives', {job: jobName})}?${selection}&limit=100000`};
  // A job's window has no range sums or export of its own: a rank's trace has them.
  const viewer = createTraceViewer(page, jobName, {trace: jobTrace, range: null, export: null}, first,
                                   (steps && steps.steps) || [], job);
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

// `job` (a job's window, renderJobTracePage): {selection: 'capture_id=C', offsets:
// Map(profile id -> BigInt offset), ranks: [{rank, profile_id, …}], collectives: url}. Its tracks
// carry profile_id and rank and are keyed by both; details read each event from its own profile.
// `urls`: the API's URLs of this viewer's trace window, range sums and export (null: none).
function createTraceViewer(page, profileId, urls, first, steps, job = null) {
  const origin = exactInt(first, 'start_ns');
  const total = Number(exactInt(first, 'end_ns') - origin);
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
  const element = h('div', {class: 'trace-viewer'},
    h('section', {class: 'card trace-card'}, scroller, tooltip), rangePanel, details);

  // The viewer's state, shared by the trace-*.js modules.
  const tv = {
    page, profileId, urls, job, steps, origin, total, tracks, v,
    canvas, scroller, status, details, rangePanel, tooltip, element,
    layout: [],          // {track, y, height} | {heading, y} (trace-layout.js computeLayout)
    canvasHeight: 0,
    collectives: null,   // a job's matched collectives, fetched once (trace-details.js)
    mouseX: null,        // the pointer's x on the canvas, the centre of a zoom by key
    fetchSoon: null,
  };
  // Loads the window on screen after the view stops moving; selects a jumped-to event in it.
  const loadView = async () => { if (await fetchView(tv)) selectPending(tv); };
  tv.fetchSoon = debounce(loadView, 80);

  const toolbar = h('div', {class: 'trace-toolbar'},
    searchBox,
    h('button', {class: 'btn', type: 'button', onclick: () => zoomTo(tv, 0, total)}, 'Show all'),
    ...(job ? [] : [exportBtn, perfettoBtn]), status);
  attachInput(tv, searchBox);
  attachExport(tv, exportBtn, perfettoBtn);

  // Where drawn events are on screen (page coordinates): lets a test click one as a user would.
  element.visibleEventBoxes = (kind) => {
    const rect = canvas.getBoundingClientRect();
    const out = [];
    for (const item of tv.layout) {
      if (!item.track || (kind && item.track.kind !== kind)) continue;
      const d = v.data.get(keyOf(item.track));
      for (const e of (d ? d.events : [])) {
        const x0 = Math.max(TRACE.labelWidth, xOf(tv, e.s)), x1 = Math.min(canvas.clientWidth, xOf(tv, e.s + e.d));
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
  element.rankHeadings = () => tv.layout.filter((l) => l.rankHeading).map((l) => {
    const rect = canvas.getBoundingClientRect();
    return {rank: l.rank, x: rect.left + window.scrollX + TRACE.labelWidth / 2, y: rect.top + window.scrollY + l.y + TRACE.groupHead / 2 - scroller.scrollTop};
  });

  return {
    element, toolbar,
    start() {
      listenToKeys(tv);
      computeLayout(tv);
      draw(tv);
      loadView();
    },
  };
}
