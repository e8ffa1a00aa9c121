// fleetprof web app — comparing profiles (/compare?profile=BASE&profile=B…&by=op|kernel|scope):
// one row per name with each profile's value as a bar against the baseline's, from
// The API's Diff method. With fewer than two profiles the page helps pick them.

import {api, apiPath, clear, debounce, emptyBlock, enc, fmtDate, fmtDuration, fmtInt, h, labelChips, loadingBlock, num, query, setQuery, urlWith} from './core.js';
import {createFlameGraph} from './flame.js';
import {navigate, route} from './router.js';
import {DEFAULT_ROW_LIMIT} from './table.js';

const COMPARE_COLORS = ['#8a94a6', '#3874e8', '#e8822c', '#2a9d6f', '#9254c8', '#c9455a', '#b08a1f', '#3fa7c9'];

// What a row's bars show, per kind of diff.
const COMPARE_METRICS = {
  op: [['total_ns', 'total'], ['self_ns', 'self'], ['device_total_ns', 'device total'], ['device_self_ns', 'device self']],
  scope: [['self_ns', 'self'], ['total_ns', 'total'], ['device_self_ns', 'device self'], ['device_total_ns', 'device total']],
  kernel: [['total_ns', 'total'], ['count', 'count']],
};

const STATUS_HELP = {
  added: 'only in the last profile, not in the baseline',
  removed: 'in the baseline, not in the last profile',
  changed: 'count or total differs between the baseline and the last profile',
  same: 'equal count and total in the baseline and the last profile',
};

function comparePicker(ids, by) {
  const base = h('input', {type: 'text', id: 'compare-base', class: 'mono', size: 26, value: ids[0] || '',
                           placeholder: 'baseline profile id'});
  const others = h('input', {type: 'text', id: 'compare-others', class: 'mono', size: 54,
                             value: ids.slice(1).join(', '), placeholder: 'profile ids, comma separated'});
  const bySelect = h('select', {id: 'compare-by'}, ['op', 'kernel', 'scope'].map((b) =>
    h('option', {value: b, selected: b === by}, b === 'scope' ? 'scope (record_function)' : b)));
  const form = h('form', {class: 'filters', id: 'compare-form'},
    h('label', {class: 'field'}, h('span', null, 'Baseline'), base),
    h('label', {class: 'field'}, h('span', null, 'Compare with'), others),
    h('label', {class: 'field'}, h('span', null, 'By'), bySelect),
    h('div', {class: 'field-actions'}, h('button', {type: 'submit', class: 'btn primary'}, 'Compare')));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const list = [base.value.trim(), ...others.value.split(/[\s,]+/)].filter(Boolean);
    navigate(urlWith('/compare', {profile: list, by: bySelect.value}));
  });
  return form;
}

// Recent profiles of the baseline's job, to add with one click.
async function compareSuggestions(page, ids, by, holder) {
  const base = await page.load(api(apiPath('GetProfile', {profile_id: ids[0]})), holder, 'Could not load the baseline');
  if (!base) return;
  const job = base.profile.job;
  const list = await page.load(api(apiPath('ListProfiles', {job, page_size: 20})), holder, 'Could not list profiles');
  if (!list) return;
  const candidates = (list.profiles || []).filter((p) => !ids.includes(p.profile_id));
  clear(holder).append(h('h2', null, `Add a profile of job ${job}`),
    candidates.length ? h('ul', {class: 'suggestions'}, candidates.map((p) => h('li', null,
      h('a', {href: urlWith('/compare', {profile: [...ids, p.profile_id], by}), class: 'mono suggestion'}, p.profile_id),
      ` · ${p.node || '–'} · ${fmtDate(p.ingested_at_ns)}`, ' ', labelChips(p.labels))))
      : emptyBlock(['No other profile of this job. Enter ids above, or see ', h('a', {href: '/profiles'}, 'all profiles'), '.']));
}

function valueOf(v, key) { return v === null || v === undefined ? null : num(v[key]); }

function changeText(base, value) {
  if (base === null || value === null) return '';
  if (base === 0) return value === 0 ? '±0' : 'new time';
  const pct = (100 * (value - base)) / base;
  return `${pct >= 0 ? '+' : '−'}${Math.abs(pct).toFixed(Math.abs(pct) < 10 ? 1 : 0)}%`;
}

// One row: name, status, then per profile a bar scaled to the row's largest value.
function compareRow(row, metric, profiles) {
  const values = row.values.map((v) => valueOf(v, metric));
  const max = Math.max(1, ...values.filter((v) => v !== null).map((v) => Math.abs(v)));
  const format = metric === 'count' ? fmtInt : fmtDuration;
  return h('tr', {class: `compare-row status-${row.status}`, 'data-name': row.name},
    h('td', {class: 'col-name', title: row.name}, row.name),
    h('td', null, h('span', {class: `tag status-tag status-${row.status}`, title: STATUS_HELP[row.status]}, row.status)),
    h('td', {class: 'bars-cell'}, values.map((v, i) => h('div', {class: 'compare-bar-line',
      title: `${profiles[i]}: ${v === null ? 'absent' : `${fmtInt(v)}${metric === 'count' ? '' : ' ns'}`}`},
      h('span', {class: 'compare-bar-track'}, v === null ? h('span', {class: 'compare-absent'}, 'absent') :
        h('span', {class: 'compare-bar', style: `width:${((100 * Math.abs(v)) / max).toFixed(1)}%;` +
                                                `background:${COMPARE_COLORS[i % COMPARE_COLORS.length]}`})),
      h('span', {class: 'compare-value num'}, v === null ? '–' : format(v)),
      h('span', {class: 'compare-change num'}, i === 0 ? 'base' : changeText(values[0], v))))));
}

function compareTable(diff, metric, filter, statuses, showAll) {
  const q = filter.toLowerCase();
  const rows = diff.rows.filter((r) => statuses.has(r.status) && (!q || r.name.toLowerCase().includes(q)));
  const shown = showAll ? rows : rows.slice(0, DEFAULT_ROW_LIMIT);
  return h('div', null,
    h('div', {class: 'table-scroll'}, h('table', {class: 'data-table compare-table'},
      h('thead', null, h('tr', null, h('th', {scope: 'col'}, diff.by === 'kernel' ? 'kernel' : diff.by),
        h('th', {scope: 'col', style: 'width:7em'}, 'status'),
        h('th', {scope: 'col'}, `${(COMPARE_METRICS[diff.by].find(([k]) => k === metric) || [0, metric])[1]} per profile`))),
      h('tbody', null, shown.map((r) => compareRow(r, metric, diff.profiles))))),
    h('div', {class: 'table-footer'}, `${fmtInt(shown.length)} of ${fmtInt(rows.length)} rows`,
      rows.length > shown.length ? h('button', {type: 'button', class: 'link-button', id: 'compare-show-all',
        onclick: () => { setQuery({all: 1}); route(); }}, ' show all') : null,
      num(diff.omitted_rows) ? ` (${fmtInt(diff.omitted_rows)} more past the limit)` : null));
}

export async function renderComparePage(page) {
  const q = query();
  const ids = q.getAll('profile');
  const by = ['op', 'kernel', 'scope'].includes(q.get('by')) ? q.get('by') : 'op';
  page.main.append(h('div', {class: 'page-head'}, h('h1', null, 'Compare profiles'),
    h('p', {class: 'explain'}, 'Each op, kernel or scope (the innermost record_function / user annotation that ' +
      'encloses the work) side by side; the first profile is the baseline, the status compares the last one ' +
      'with it. Rows are sorted by the largest change of total time.')),
    h('section', {class: 'card'}, comparePicker(ids, by)));
  if (ids.length < 2) {
    const holder = h('section', {class: 'card', id: 'compare-suggestions'},
      ids.length ? loadingBlock('Finding profiles to compare with…') :
        emptyBlock(['Pick a baseline: open a profile and press ', h('b', null, 'Compare'), ', or enter ids above.']));
    page.main.append(holder);
    if (ids.length) await compareSuggestions(page, ids, by, holder);
    return;
  }
  const results = h('section', {class: 'card', id: 'compare-results'}, loadingBlock('Comparing…'));
  page.main.append(results);
  const diff = await page.load(api(apiPath('Diff', {base: ids[0], profile: ids.slice(1), by})), results,
                               'Could not compare these profiles');
  if (!diff) return;
  const metrics = COMPARE_METRICS[diff.by] || COMPARE_METRICS.op;
  const metric = metrics.some(([k]) => k === q.get('metric')) ? q.get('metric') : metrics[0][0];
  const statuses = new Set(q.getAll('status').length ? q.getAll('status') : ['added', 'removed', 'changed', 'same']);
  const legend = h('div', {class: 'compare-legend'}, diff.profiles.map((id, i) => h('a', {class: 'compare-key',
    href: `/profiles/${enc(id)}`}, h('span', {class: 'swatch', style: `background:${COMPARE_COLORS[i % COMPARE_COLORS.length]}`}),
    i === 0 ? 'baseline ' : '', h('span', {class: 'mono'}, id),
    num(diff.steps[i]) ? h('span', {class: 'muted'}, ` · ${fmtInt(diff.steps[i])} steps`) : null)));
  const counts = {};
  for (const r of diff.rows) counts[r.status] = (counts[r.status] || 0) + 1;
  const filter = h('input', {type: 'search', class: 'table-filter', id: 'compare-filter', value: q.get('q') || '',
                             placeholder: 'Filter by name…', 'aria-label': 'Filter rows by name'});
  const controls = h('div', {class: 'compare-controls'},
    h('label', {class: 'field inline'}, h('span', null, 'Bars show'),
      h('select', {id: 'compare-metric', onchange: (e) => { setQuery({metric: e.target.value}); route(); }},
        metrics.map(([k, label]) => h('option', {value: k, selected: k === metric}, label)))),
    ['changed', 'added', 'removed', 'same'].map((s) => h('label', {class: 'check', title: STATUS_HELP[s]},
      h('input', {type: 'checkbox', 'data-status': s, checked: statuses.has(s),
                  onchange: () => {
                    const on = [...controls.querySelectorAll('input[data-status]')].filter((c) => c.checked)
                      .map((c) => c.dataset.status);
                    setQuery({status: on.length === 4 ? null : on});
                    route();
                  }}),
      h('span', {class: `tag status-tag status-${s}`}, s), ` ${fmtInt(counts[s] || 0)}`)),
    filter);
  const body = h('div');
  const draw = () => clear(body).append(compareTable(diff, metric, filter.value, statuses, q.get('all') === '1'));
  filter.addEventListener('input', debounce(() => { setQuery({q: filter.value}); draw(); }, 150));
  clear(results).append(legend, controls, body);
  draw();
  // The last profile's call tree coloured by its change against the baseline's same stacks.
  const target = ids[ids.length - 1];
  page.main.append(createFlameGraph({title: 'Flame graph diff',
    explain: `Frames of ${target} (widths: its own values), coloured by the change of the same stack against the ` +
             `baseline ${ids[0]}. Hover a frame for both values.`,
    urlFor: (value) => apiPath('GetFlameGraph', {profile_id: target, value}),
    baseUrlFor: (value) => apiPath('GetFlameGraph', {profile_id: ids[0], value})}));
}
