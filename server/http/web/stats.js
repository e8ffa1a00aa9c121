// fleetprof web app — the `nsys stats` reports of a profile (GET …/stats): one tab per report,
// with nsys's columns, for every format (docs/analysis.md, "nsys stats reports").

import {api, apiPath, clear, fmtBytes, fmtDuration, fmtInt, h, loadingBlock, num, section} from './core.js';
import {createDataTable, durationColumn, numberColumn, textColumn} from './table.js';

// The reports in nsys's order: the JSON key of a row's name, and whether values are bytes.
const REPORTS = [
  {id: 'cuda_gpu_kern_sum', title: 'GPU kernels', name: 'name', bytes: false,
   explain: 'Kernels grouped by name across devices (nsys stats --report cuda_gpu_kern_sum).'},
  {id: 'cuda_gpu_mem_time_sum', title: 'Memory ops by time', name: 'operation', bytes: false,
   explain: 'Copies and memsets grouped by operation, by their duration.'},
  {id: 'cuda_gpu_mem_size_sum', title: 'Memory ops by size', name: 'operation', bytes: true,
   explain: 'Copies and memsets grouped by operation, by the bytes they moved (0 where the trace gives no size).'},
  {id: 'cuda_api_sum', title: 'CUDA API', name: 'name', bytes: false,
   explain: 'Runtime and driver calls grouped by name.'},
  {id: 'nvtx_sum', title: 'NVTX ranges', name: 'range', bytes: false,
   explain: 'Closed NVTX ranges grouped by full name and style (Kineto: record_function annotations as PushPop).'},
];

function fractional(key, label, bytes, help) {
  return {key, label, kind: 'num', width: '6.5em', help, value: (r) => Number(r[key] ?? 0),
          cell: (r) => (bytes ? fmtBytes(Number(r[key] ?? 0)) : fmtDuration(Math.round(Number(r[key] ?? 0)))),
          title: (r) => `${Number(r[key] ?? 0).toFixed(1)} ${bytes ? 'bytes' : 'ns'}`};
}

function columnsOf(report) {
  const amount = report.bytes
    ? (key, label) => ({key, label, kind: 'num', width: '6.5em', value: (r) => num(r[key]),
                        cell: (r) => fmtBytes(num(r[key])), title: (r) => `${fmtInt(num(r[key]))} bytes`})
    : (key, label) => durationColumn(key, label, {width: '6.5em'});
  const columns = [textColumn(report.name, report.name, {className: 'col-name', title: (r) => r[report.name]})];
  if (report.id === 'nvtx_sum') columns.push(textColumn('style', 'style', {width: '6.5em'}));
  if (!report.bytes) {
    columns.push({key: 'time_pct', label: 'time %', kind: 'num', width: '6em', value: (r) => Number(r.time_pct ?? 0),
                  cell: (r) => `${Number(r.time_pct ?? 0).toFixed(1)}%`, help: 'Share of the report’s total'});
  }
  columns.push(amount('total', 'total'), numberColumn('instances', 'count', {width: '6.5em'}),
               fractional('avg', 'avg', report.bytes), fractional('med', 'median', report.bytes, 'The middle value'),
               amount('min', 'min'), amount('max', 'max'),
               fractional('stddev', 'std dev', report.bytes, 'Sample standard deviation'));
  return columns;
}

// The section; its data loads after the page, so a large report never delays the rest.
export function statsSection(page, profileId) {
  const body = h('div', null, loadingBlock('Loading the nsys stats reports…'));
  const card = section('nsys stats', 'The reports nsys stats prints, computed for this profile: the same numbers ' +
    'as fleetprof stats and GET …/stats (CSV with nsys’s own columns: fleetprof stats --format csv).', body);
  card.id = 'stats-section';
  page.load(api(apiPath('GetStats', {profile_id: profileId})), body, 'Could not load the nsys stats reports')
    .then((answer) => {
      if (!answer) return;
      const reports = answer.reports || {};
      const tabs = h('div', {class: 'tabs', role: 'tablist'});
      const table = h('div', {class: 'tab-body'});
      const show = (report) => {
        for (const tab of tabs.children) tab.setAttribute('aria-selected', String(tab.dataset.tab === report.id));
        const rows = reports[report.id] || [];
        clear(table).append(h('p', {class: 'explain'}, report.explain),
          createDataTable({className: `stats-table stats-${report.id}`, columns: columnsOf(report), rows,
                           filterText: (r) => `${r[report.name]} ${r.style || ''}`,
                           emptyText: 'No rows of this kind in this profile.', limit: 100}));
      };
      for (const report of REPORTS) {
        tabs.append(h('button', {type: 'button', role: 'tab', class: 'tab', 'data-tab': report.id, id: `stats-tab-${report.id}`,
                                 onclick: () => show(report)},
                      report.title, h('span', {class: 'tab-count'}, fmtInt((reports[report.id] || []).length))));
      }
      const open = num(answer.nvtx_open_ranges);
      clear(body).append(tabs, table);
      if (open > 0) body.append(h('p', {class: 'explain'}, `${fmtInt(open)} NVTX ranges were still open when the trace ended.`));
      show(REPORTS.find((r) => (reports[r.id] || []).length) || REPORTS[0]);
    });
  return card;
}
