// fleetprof web app — the profiles list (/, /profiles) and one profile (/profiles/{id}).

import {KIND_COLORS, chartLegend, deviceBreakdownChart, deviceLabel, memoryChart, memoryDomain, samplesChart, stepsChart} from './charts.js';
import {api, ApiError, apiPath, appendChildren, bytesSpan, clear, durationSpan, emptyBlock, enc, exactTitle, fmtBytes, fmtDate, fmtDuration, fmtInt, fmtOffset, fmtPct, fmtRate, h, isoDate, labelChips, loadingBlock, looksLikeUnixNs, num, pad2, query, section, setQuery, showError, spanBetween, stat, timestampSpan, urlWith} from './core.js';
import {profileFindingsSection} from './findings.js';
import {createFlameGraph} from './flame.js';
import {navigate} from './router.js';
import {statsSection} from './stats.js';
import {createDataTable, durationColumn, numberColumn, tableStateFromQuery, tableStateToQuery, textColumn} from './table.js';

// ---------------------------------------------------------------------------------------------
// Profiles list: filters and paging live in the query string
// (?job=J&label=k=v&since_ns=A&until_ns=B&page_size=N&page_token=T).

function profileFiltersFromQuery(q) {
  return {job: q.get('job') || '', label: q.getAll('label'), since_ns: q.get('since_ns') || '',
          until_ns: q.get('until_ns') || '', page_size: q.get('page_size') || '',
          page_token: q.get('page_token') || ''};
}

// "2024-04-04T03:51" (local, from <input type=datetime-local>) → unix ns as a decimal string.
function localDateToNs(value) {
  const ms = new Date(value).getTime();
  return Number.isFinite(ms) ? (BigInt(ms) * 1000000n).toString() : '';
}

function nsToLocalDate(ns) {
  if (!/^\d+$/.test(ns) || !looksLikeUnixNs(ns)) return '';
  const d = new Date(Number(BigInt(ns) / 1000000n));
  return `${d.getFullYear()}-${pad2(d.getMonth() + 1)}-${pad2(d.getDate())}T${pad2(d.getHours())}:${pad2(d.getMinutes())}`;
}

// A time bound: an integer ns field with a date picker that fills it.
function timeBoundField(id, label, value) {
  const nsInput = h('input', {type: 'text', id, name: id, value, inputmode: 'numeric',
                              placeholder: 'ns', pattern: '\\d*', class: 'mono', size: 17});
  const dateInput = h('input', {type: 'datetime-local', id: `${id}-date`, value: nsToLocalDate(value),
                                'aria-label': `${label} as a date`});
  dateInput.addEventListener('change', () => { nsInput.value = dateInput.value ? localDateToNs(dateInput.value) : ''; });
  nsInput.addEventListener('change', () => { dateInput.value = nsToLocalDate(nsInput.value.trim()); });
  return h('label', {class: 'field'}, h('span', null, label), h('span', {class: 'field-pair'}, nsInput, dateInput));
}

function profileFilterForm(filters) {
  const job = h('input', {type: 'text', id: 'filter-job', value: filters.job, placeholder: 'any job', size: 16});
  const label = h('input', {type: 'text', id: 'filter-label', value: filters.label.join(', '),
                            placeholder: 'k=v, k2=v2', size: 18});
  const form = h('form', {class: 'filters', id: 'profile-filters'},
    h('label', {class: 'field'}, h('span', null, 'Job'), job),
    h('label', {class: 'field'}, h('span', null, 'Labels'), label),
    timeBoundField('filter-since', 'Since', filters.since_ns),
    timeBoundField('filter-until', 'Until', filters.until_ns),
    h('div', {class: 'field-actions'},
      h('button', {type: 'submit', class: 'btn primary', id: 'filter-apply'}, 'Apply'),
      h('a', {href: '/profiles', class: 'btn'}, 'Clear')));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const labels = label.value.split(',').map((s) => s.trim()).filter(Boolean);
    const bad = labels.find((l) => !/^[^=]+=.*$/.test(l));
    const since = form.querySelector('#filter-since').value.trim();
    const until = form.querySelector('#filter-until').value.trim();
    if (bad) return showError(new ApiError('INVALID_ARGUMENT', `label “${bad}” is not of the form key=value`, 0));
    if (!/^\d*$/.test(since) || !/^\d*$/.test(until)) {
      return showError(new ApiError('INVALID_ARGUMENT', 'since/until must be integer nanoseconds', 0));
    }
    navigate(urlWith('/profiles', {job: job.value.trim(), label: labels, since_ns: since, until_ns: until,
                                   page_size: filters.page_size}));
  });
  return form;
}

function profileRow(p) {
  const link = `/profiles/${enc(p.profile_id)}`;
  return h('tr', {class: 'profile-row', 'data-profile-id': p.profile_id},
    h('td', {class: 'mono'}, h('a', {href: link, class: 'profile-link'}, p.profile_id)),
    h('td', null, p.job ? h('a', {href: `/jobs/${enc(p.job)}`}, p.job) : h('span', {class: 'muted'}, '–')),
    h('td', null, p.node || '–'),
    h('td', null, h('span', {class: 'tag'}, p.format || '?')),
    h('td', {class: 'num'}, timestampSpan(p, 'start_ns')),
    h('td', {class: 'num'}, spanBetween(p, 'start_ns', 'end_ns')),
    h('td', {class: 'num', title: num(p.skipped_events) ? `${fmtInt(p.skipped_events)} skipped as malformed` : null},
      fmtInt(num(p.events))),
    h('td', {class: 'num'}, bytesSpan(p.size_bytes)),
    h('td', null, labelChips(p.labels)),
    h('td', {class: 'num', title: isoDate(p.ingested_at_ns)}, fmtDate(p.ingested_at_ns)));
}

function profilesTable(profiles) {
  const headers = ['Profile', 'Job', 'Node', 'Format', 'Trace start', 'Span', 'Events', 'Size', 'Labels', 'Ingested'];
  const numeric = new Set(['Trace start', 'Span', 'Events', 'Size', 'Ingested']);
  return h('div', {class: 'table-scroll'},
    h('table', {class: 'data-table profiles-table'},
      h('thead', null, h('tr', null, headers.map((t) => h('th', {class: numeric.has(t) ? 'num' : null, scope: 'col'}, t)))),
      h('tbody', null, profiles.map(profileRow))));
}

export async function renderProfilesPage(page) {
  const filters = profileFiltersFromQuery(query());
  const results = h('div', {class: 'results'}, loadingBlock('Loading profiles…'));
  page.main.append(
    h('div', {class: 'page-head'}, h('h1', null, 'Profiles'),
      h('p', {class: 'explain'}, 'Every indexed profile, newest ingest first. Filter by job, labels ' +
        '(every pair must match) or time (profiles overlapping [since, until], trace clock ns).')),
    h('section', {class: 'card'}, profileFilterForm(filters), results));

  const data = await page.load(api(apiPath('ListProfiles', {
    job: filters.job, label: filters.label, since_ns: filters.since_ns, until_ns: filters.until_ns,
    page_size: filters.page_size, page_token: filters.page_token})), results, 'Could not list profiles');
  if (!data) return;
  const profiles = data.profiles || [];
  clear(results);
  if (!profiles.length) {
    results.append(emptyBlock(filters.page_token ? 'No more profiles.' :
      ['No profile matches. Upload one with ', h('code', null, 'fleetprof upload FILE --job J'), ' or start a ',
       h('a', {href: '/captures'}, 'capture'), '.']));
  } else {
    results.append(profilesTable(profiles));
  }
  const pager = h('div', {class: 'pager'},
    h('span', {class: 'muted'}, `${fmtInt(profiles.length)} profile${profiles.length === 1 ? '' : 's'} on this page`));
  if (filters.page_token) pager.append(h('a', {class: 'btn', href: urlWith('/profiles', Object.assign({}, filters, {page_token: ''}))}, '« First page'));
  if (data.next_page_token) {
    pager.append(h('a', {class: 'btn', id: 'next-page',
                         href: urlWith('/profiles', Object.assign({}, filters, {page_token: data.next_page_token}))},
                   'Next page »'));
  }
  results.append(pager);
}

// ---------------------------------------------------------------------------------------------
// One profile

// Kernel columns; `share` needs the sum of all kernels' totals.
export const kernelColumns = (rows) => {
  const sum = rows.reduce((s, r) => s + num(r.total_ns), 0);
  const max = rows.reduce((m, r) => Math.max(m, num(r.total_ns)), 0);
  return [
    textColumn('name', 'name', {className: 'col-name', title: (r) => r.name}),
    textColumn('kind', 'kind', {width: '9em', cell: (r) => h('span', {class: `tag kind-${r.kind}`}, r.kind || '–')}),
    numberColumn('count', 'count', {width: '6.5em'}),
    durationColumn('total_ns', 'total', {width: '7em'}),
    {key: 'share', label: 'share', kind: 'num', width: '8.5em', help: 'Share of the sum of all activity durations',
     value: (r) => num(r.total_ns), cell: (r) => shareCell(num(r.total_ns), sum, max)},
    {key: 'avg', label: 'avg', kind: 'num', width: '7em', value: (r) => num(r.total_ns) / Math.max(1, num(r.count)),
     cell: (r) => fmtDuration(Math.round(num(r.total_ns) / Math.max(1, num(r.count)))),
     title: (r) => `${fmtInt(Math.round(num(r.total_ns) / Math.max(1, num(r.count))))} ns (rounded)`},
    durationColumn('min_ns', 'min', {width: '7em'}),
    durationColumn('max_ns', 'max', {width: '7em'}),
  ];
};

export const opColumns = () => [
  textColumn('name', 'name', {className: 'col-name', title: (r) => r.name}),
  numberColumn('count', 'count', {width: '6.5em'}),
  durationColumn('total_ns', 'total', {width: '7.5em', help: 'Sum of the op’s durations'}),
  durationColumn('self_ns', 'self', {width: '7.5em', help: 'Duration minus its direct children'}),
  durationColumn('device_self_ns', 'device self', {width: '8.5em',
                 help: 'Device time launched by the op’s own runtime calls'}),
  durationColumn('device_total_ns', 'device total', {width: '9em',
                 help: 'Device time launched by the op’s whole subtree'}),
];

const xlaOpColumns = () => [
  textColumn('name', 'name', {className: 'col-name', title: (r) => r.name}),
  textColumn('category', 'category', {width: '12em', title: (r) => r.category || ''}),
  textColumn('module', 'module', {width: '18em', title: (r) => r.module || ''}),
  numberColumn('count', 'count', {width: '6em'}),
  durationColumn('total_ns', 'total', {width: '7em'}),
  {key: 'flops_per_second', label: 'FLOP/s', kind: 'num', width: '8em',
   value: (r) => Number(r.flops_per_second ?? -1), cell: (r) => fmtRate(r.flops_per_second, 'FLOP/s'),
   title: (r) => (r.flops !== undefined ? `${fmtInt(num(r.flops))} FLOPs in total` : 'no FLOP count in the trace')},
  {key: 'bytes_accessed_per_second', label: 'bytes/s', kind: 'num', width: '8em',
   value: (r) => Number(r.bytes_accessed_per_second ?? -1), cell: (r) => fmtRate(r.bytes_accessed_per_second, 'B/s'),
   title: (r) => (r.bytes_accessed !== undefined ? `${fmtInt(num(r.bytes_accessed))} bytes accessed in total` : 'no byte count in the trace')},
];

// The share of the sum as text, with a bar scaled to the largest row.
function shareCell(value, sum, max) {
  const ratio = sum > 0 ? value / sum : 0;
  const width = max > 0 ? (100 * value) / max : 0;
  return h('span', {class: 'share'},
           h('span', {class: 'share-track'}, h('span', {class: 'share-bar', style: `width:${width.toFixed(1)}%`})),
           h('span', {class: 'share-text'}, fmtPct(ratio)));
}

const PROFILE_TABLES = [
  {id: 'kernels', title: 'Kernels', className: 'kernel-table', columns: kernelColumns,
   explain: 'Device activity (kernels, memcpy, memset) grouped by exact name across all devices. ' +
            'Share is of the sum of all activity durations.'},
  {id: 'ops', title: 'Ops', className: 'op-table', columns: opColumns,
   explain: 'Host ops as in PyTorch key_averages(): self = duration minus direct children; ' +
            'device self / device total = device time launched by the op’s own runtime calls / by its whole subtree.'},
  {id: 'xla_ops', title: 'XLA ops', className: 'xla-op-table', columns: xlaOpColumns,
   explain: 'HLO ops merged across devices by (name, module); rates are total FLOPs or bytes over total time.'},
];

function profileHeader(profile, summary) {
  const id = profile.profile_id;
  const fields = [
    ['Job', profile.job ? h('a', {href: `/jobs/${enc(profile.job)}`}, profile.job) : '–'],
    ['Node', profile.node || '–'],
    ['Format', h('span', {class: 'tag'}, profile.format || summary.format || '?')],
    ['Span', spanBetween(profile, 'start_ns', 'end_ns')],
    ['Events', h('span', {class: 'num'}, fmtInt(num(profile.events || summary.events)))],
    ['Trace start', timestampSpan(profile, 'start_ns')],
    ['File', h('span', {class: 'mono ellipsis', title: profile.file_name || ''}, profile.file_name || '–')],
    ['Size', bytesSpan(profile.size_bytes)],
    ['Ingested', timestampSpan(profile, 'ingested_at_ns')],
    ['Labels', labelChips(profile.labels)],
  ];
  const warnings = [];
  const skipped = num(profile.skipped_events || summary.skipped_events);
  if (skipped > 0) warnings.push(`${fmtInt(skipped)} malformed events were skipped at ingest.`);
  const unknown = num(summary.unknown_category_events);
  if (unknown > 0) warnings.push(`${fmtInt(unknown)} events had a category fleetprof does not know and were not analysed.`);
  const metadata = Object.entries(summary.metadata || {});
  return h('section', {class: 'card profile-header'},
    h('div', {class: 'profile-title'},
      h('h1', null, 'Profile ', h('span', {class: 'mono', id: 'profile-id'}, id)),
      h('div', {class: 'profile-actions'},
        h('a', {class: 'btn', href: `/profiles/${enc(id)}/trace`}, 'Trace view'),
        h('a', {class: 'btn', href: urlWith('/compare', {profile: id})}, 'Compare'),
        h('a', {class: 'btn', href: apiPath('GetProfile', {profile_id: id}), target: '_blank', rel: 'noopener'}, 'JSON'))),
    h('dl', {class: 'meta-grid'}, fields.map(([k, v]) => h('div', {class: 'meta'}, h('dt', null, k), h('dd', null, v)))),
    warnings.map((w) => h('div', {class: 'notice'}, w)),
    metadata.length ? h('details', {class: 'metadata'}, h('summary', null, `Trace metadata (${metadata.length})`),
      h('dl', {class: 'meta-grid small'}, metadata.sort(([a], [b]) => a.localeCompare(b))
        .map(([k, v]) => h('div', {class: 'meta'}, h('dt', null, k), h('dd', {class: 'mono'}, v))))) : null);
}

function devicesSection(devices) {
  return section('Device time',
    'Per device over its span (first activity start to last end): busy = time with any kernel, memcpy or ' +
    'memset running (union of intervals), idle = span − busy; busy is split by kind.',
    devices.length ? deviceBreakdownChart(devices) : emptyBlock('No device activity in this profile.'));
}

function stepsSection(steps) {
  if (!steps.length) {
    return section('Steps', 'Training or inference steps found in the trace (e.g. ProfilerStep#N).',
                   emptyBlock('No step markers in this profile.'));
  }
  const durations = steps.map((s) => num(s.duration_ns));
  const total = durations.reduce((a, b) => a + b, 0);
  const busy = steps.reduce((a, s) => a + Math.min(num(s.duration_ns), num(s.device_busy_ns)), 0);
  return section('Steps', 'One bar per step: its wall duration, the dark part the device busy time inside it.',
    h('div', {class: 'stat-row'},
      stat('steps', fmtInt(steps.length)), stat('mean', durationSpan(Math.round(total / steps.length))),
      stat('min', durationSpan(Math.min(...durations))), stat('max', durationSpan(Math.max(...durations))),
      stat('device busy', total > 0 ? fmtPct(busy / total) : '–')),
    chartLegend([['step duration', '#c9d8f6'], ['device busy', KIND_COLORS.compute]]),
    stepsChart(steps));
}

function memorySection(memory, originNs) {
  const explain = 'Allocated bytes over time per device from the allocator’s memory events; the dot marks the ' +
                  'peak. Time is from the profile start.';
  if (!memory.length) return section('Memory', explain, emptyBlock('No memory events in this profile.'));
  const domain = memoryDomain(memory, originNs);
  return section('Memory', explain, memory.map((m) => h('div', {class: 'memory-device', 'data-device': m.device},
    h('div', {class: 'memory-title'}, h('b', null, deviceLabel(m.device)),
      h('span', {class: 'kv'}, h('span', {class: 'k'}, 'peak'), bytesSpan(m.peak_bytes)),
      h('span', {class: 'kv'}, h('span', {class: 'k'}, 'at'), h('span', {class: 'num', title: exactTitle(m, 'peak_ns')},
        fmtOffset(num(m.peak_ns) - originNs))),
      h('span', {class: 'kv'}, h('span', {class: 'k'}, 'samples'), fmtInt(num(m.samples))),
      num(m.allocator_peak_bytes) > 0 ? h('span', {class: 'kv', title: 'The allocator’s own high-water mark, which may predate the trace'},
        h('span', {class: 'k'}, 'allocator peak'), bytesSpan(m.allocator_peak_bytes)) : null),
    memoryChart(m, originNs, domain))));
}

const SAMPLE_COLUMNS = [
  textColumn('device', 'device', {width: '5em'}),
  textColumn('model', 'model', {title: (r) => `${r.model || ''} ${r.uuid || ''}`}),
  {key: 'memory_used_bytes', label: 'memory used', kind: 'num', width: '19em', value: (r) => num(r.memory_used_bytes),
   cell: (r) => memoryUsedCell(r)},
  {key: 'utilization_ratio', label: 'utilization', kind: 'num', width: '8em',
   value: (r) => (r.has_utilization ? Number(r.utilization_ratio) || 0 : -1),
   cell: (r) => (r.has_utilization ? fmtPct(Number(r.utilization_ratio) || 0) : '–')},
  {key: 'memory_utilization_ratio', label: 'mem. busy', kind: 'num', width: '8em',
   help: 'Share of time device memory was being read or written (NVML)',
   value: (r) => (r.has_utilization ? Number(r.memory_utilization_ratio) || 0 : -1),
   cell: (r) => (r.has_utilization ? fmtPct(Number(r.memory_utilization_ratio) || 0) : '–')},
  textColumn('jobs', 'job memory', {value: (r) => jobMemoryText(r), cell: (r) => jobMemoryText(r) || '–'}),
  {key: 'sampled_at_ns', label: 'sampled at', kind: 'num', width: '13em', value: (r) => num(r.sampled_at_ns),
   cell: (r) => fmtDate(r.sampled_at_ns), title: (r) => `${exactTitle(r, 'sampled_at_ns')} · ${isoDate(r.sampled_at_ns)}`},
];

function jobMemoryText(sample) {
  return Object.entries(sample.job_memory_used_bytes || {}).map(([job, b]) => `${job}: ${fmtBytes(b)}`).join(', ');
}

function memoryUsedCell(sample) {
  const used = num(sample.memory_used_bytes);
  const total = num(sample.memory_total_bytes);
  return h('span', {class: 'meter-cell', title: `${fmtInt(used)} of ${fmtInt(total)} bytes`},
           h('span', {class: 'meter'}, h('span', {class: 'meter-fill', style: `width:${total > 0 ? (100 * used / total).toFixed(1) : 0}%`})),
           `${fmtBytes(used)} / ${fmtBytes(total)}`);
}

function samplesSection(samples) {
  if (!samples.length) return null;
  return section('Device samples during the capture',
    'Readings of the node’s devices (NVML) taken by the agent during the capture window.',
    samplesChart(samples),
    createDataTable({className: 'device-samples-table', columns: SAMPLE_COLUMNS, rows: samples,
                     filterText: (r) => `${r.device} ${r.model} ${r.uuid}`, filterPlaceholder: 'Filter by device…',
                     limit: 50}));
}

// The tabbed kernel / op / XLA op tables; tab, sort, filter and "show all" live in the URL.
function tablesSection(summary) {
  // Tables with rows (an XSpace profile has no ops, a Kineto one no XLA ops); kernels always.
  const available = PROFILE_TABLES.filter((t) => t.id === 'kernels' || (summary[t.id] || []).length);
  const body = h('div', {class: 'tab-body'});
  const tabs = h('div', {class: 'tabs', role: 'tablist'});
  const show = (tableId) => {
    const spec = available.find((t) => t.id === tableId) || available[0];
    for (const tab of tabs.children) tab.setAttribute('aria-selected', String(tab.dataset.tab === spec.id));
    const rows = summary[spec.id] || [];
    clear(body).append(h('p', {class: 'explain'}, spec.explain),
      createDataTable({className: spec.className, columns: spec.columns(rows), rows,
                       state: tableStateFromQuery(query()),
                       emptyText: `This profile has no ${spec.title.toLowerCase()}.`,
                       onStateChange: (state) => setQuery(tableStateToQuery(state))}));
  };
  for (const spec of available) {
    tabs.append(h('button', {type: 'button', role: 'tab', class: 'tab', 'data-tab': spec.id, id: `tab-${spec.id}`,
                             onclick: () => {
                               setQuery(Object.assign({table: spec.id}, tableStateToQuery({})));
                               show(spec.id);
                             }},
      spec.title, h('span', {class: 'tab-count'}, fmtInt((summary[spec.id] || []).length))));
  }
  // Without ?table=, the first table that has rows (kernels for any GPU profile).
  const firstWithRows = available.find((t) => (summary[t.id] || []).length) || available[0];
  show(query().get('table') || firstWithRows.id);
  return h('section', {class: 'card tables-card'}, tabs, body);
}

export async function renderProfilePage(page, profileId) {
  const holder = h('div', null, loadingBlock(`Loading profile ${profileId}…`));
  page.main.append(holder);
  const data = await page.load(api(apiPath('GetProfile', {profile_id: profileId})), holder, 'Could not load the profile');
  if (!data) return;
  const profile = data.profile || {profile_id: profileId};
  const summary = data.summary || {};
  document.title = `${profile.job || 'profile'} ${profileId} · fleetprof`;
  const originNs = num(summary.start_ns || profile.start_ns);
  // appendChildren, not append(): a section without data is null, which append() would
  // print as the text "null".
  appendChildren(clear(holder), [
    profileHeader(profile, summary),
    devicesSection(summary.devices || []),
    profileFindingsSection(page, profileId),
    tablesSection(summary),
    createFlameGraph({title: 'Flame graph',
      explain: 'Where the time goes by call stack: host frames from event nesting per thread (steps folded into one ' +
               'ProfilerStep#N), kernels under the call that launched them. Click a frame to zoom in.',
      urlFor: (value) => apiPath('GetFlameGraph', {profile_id: profileId, value})}),
    statsSection(page, profileId),
    stepsSection(summary.steps || []),
    memorySection(summary.memory || [], originNs),
    samplesSection(summary.device_samples || [])]);
}
