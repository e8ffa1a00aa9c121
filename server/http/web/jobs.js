// fleetprof web app — one job (/jobs/{job}): its profiles over time (step time, device busy
// ratio, peak memory), its ranks side by side, the job-level findings, and its ops and kernels
// added up over every profile. Filters (?label=k=v&since_ns=&until_ns=) apply to all of it.

import {axisFormat, linearScale, niceTicks, responsiveChart, yAxis} from './charts.js';
import {api, apiPath, clear, emptyBlock, enc, fmtBytes, fmtDate, fmtDuration, fmtInt, fmtPct, h, loadingBlock, num, query, section, svg, urlWith} from './core.js';
import {findingsBody} from './findings.js';
import {createFlameGraph} from './flame.js';
import {kernelColumns, opColumns} from './profiles.js';
import {navigate} from './router.js';
import {createDataTable} from './table.js';

// A dot-and-line chart of one value per profile over ingest time.
function seriesChart(points, value, format, className) {
  const data = points.map((p) => [num(p.ingested_at_ns), value(p), p]).filter(([, v]) => v !== null);
  if (!data.length) return emptyBlock('No values yet.');
  return responsiveChart(className, (width) => {
    const height = 160;
    const m = {left: 70, right: 14, top: 12, bottom: 28};
    const t0 = data[0][0];
    const t1 = Math.max(data[data.length - 1][0], t0 + 1);
    const x = linearScale(t0, t1, m.left + 6, width - m.right - 6);
    const ticks = niceTicks(Math.max(...data.map(([, v]) => v), 1e-9), 3);
    const y = linearScale(0, ticks[ticks.length - 1], height - m.bottom, m.top);
    const path = data.map(([t, v], i) => `${i ? 'L' : 'M'}${x(t).toFixed(1)},${y(v).toFixed(1)}`).join(' ');
    return svg('svg', {width, height, class: 'chart-svg'},
      yAxis(ticks, y, m.left, width - m.right, axisFormat(format)),
      svg('path', {d: path, class: 'series-line'}),
      data.map(([t, v, p]) => {
        const dot = svg('circle', {cx: x(t), cy: y(v), r: 4, class: 'series-dot'},
          svg('title', null, `${p.profile_id}${p.rank ? ` · rank ${p.rank}` : ''} · ${p.node}\n${format(v)} · ` +
                             `ingested ${fmtDate(p.ingested_at_ns)}`));
        dot.addEventListener('click', () => navigate(`/profiles/${enc(p.profile_id)}`));
        return dot;
      }),
      svg('text', {x: m.left, y: height - 8, class: 'x-label'}, fmtDate(data[0][2].ingested_at_ns)),
      svg('text', {x: width - m.right, y: height - 8, 'text-anchor': 'end', class: 'x-label'},
          fmtDate(data[data.length - 1][2].ingested_at_ns)));
  });
}

// The latest profile of each rank (or node, without ranks), side by side.
function ranksSection(points) {
  const latest = new Map();
  for (const p of points) {
    const key = p.rank ? `rank ${p.rank}` : `node ${p.node}`;
    const seen = latest.get(key);
    if (!seen || num(p.ingested_at_ns) > num(seen.ingested_at_ns)) latest.set(key, p);
  }
  const ranks = [...latest.entries()].sort(([a], [b]) => a.localeCompare(b, undefined, {numeric: true}));
  const maxStep = Math.max(1, ...ranks.map(([, p]) => num(p.median_step_ns)));
  const medians = ranks.map(([, p]) => num(p.median_step_ns)).filter((v) => v > 0).sort((a, b) => a - b);
  const median = medians.length ? medians[Math.floor(medians.length / 2)] : 0;
  const explain = 'The latest profile of each rank: its median step time (bar; the line is the median over ranks) ' +
                  'and its devices’ busy share.';
  if (!ranks.length) return section('Ranks', explain, emptyBlock('No profiles match.'));
  return section('Ranks', explain, h('div', {class: 'ranks'}, ranks.map(([key, p]) => {
    const step = num(p.median_step_ns);
    return h('div', {class: 'rank-row', 'data-rank': key},
      h('a', {class: 'rank-name', href: `/profiles/${enc(p.profile_id)}`, title: p.profile_id}, key),
      h('span', {class: 'rank-track'},
        step > 0 ? h('span', {class: `rank-bar${median > 0 && step >= 1.2 * median ? ' slow' : ''}`,
                              style: `width:${((100 * step) / maxStep).toFixed(1)}%`}) : null,
        median > 0 ? h('span', {class: 'rank-median', style: `left:${((100 * median) / maxStep).toFixed(1)}%`}) : null),
      h('span', {class: 'num rank-step'}, step > 0 ? fmtDuration(step) : 'no steps'),
      h('span', {class: 'num rank-busy'}, p.busy_ratio !== undefined ? `${fmtPct(Number(p.busy_ratio))} busy` : '–'));
  })));
}

export async function renderJobPage(page, job) {
  const q = query();
  const filter = {label: q.getAll('label'), since_ns: q.get('since_ns') || '', until_ns: q.get('until_ns') || ''};
  page.main.append(h('div', {class: 'page-head'}, h('h1', null, 'Job ', h('span', {class: 'mono', id: 'job-name'}, job)),
    h('p', {class: 'explain'}, 'Every profile of the job', filter.label.length ? ` with ${filter.label.join(', ')}` : '',
      filter.since_ns || filter.until_ns ? ' in the chosen time range' : '', ': its trend over time, its ranks, ',
      'findings across ranks, and its ops and kernels added up.'),
    h('div', {class: 'link-row'}, h('a', {class: 'btn', href: urlWith('/profiles', {job})}, 'Profiles'),
      h('a', {class: 'btn', href: urlWith('/captures', {job})}, 'Capture'),
      h('a', {class: 'btn', href: apiPath('JobSeries', Object.assign({job}, filter)), target: '_blank', rel: 'noopener'}, 'Series JSON'))));
  const seriesHolder = h('div', null, loadingBlock('Loading the job’s profiles…'));
  page.main.append(seriesHolder);
  const series = await page.load(api(apiPath('JobSeries', Object.assign({job}, filter))), seriesHolder,
                                 'Could not load the job');
  if (!series) return;
  const points = series.points || [];
  if (!points.length) {
    clear(seriesHolder).append(h('section', {class: 'card'}, emptyBlock(['No profile of job ', h('b', null, job),
      ' matches. Upload one with ', h('code', null, `fleetprof upload FILE --job ${job}`), ' or ',
      h('a', {href: urlWith('/captures', {job})}, 'capture'), ' it.'])));
    return;
  }
  const findings = h('div', null, loadingBlock('Running the job rules…'));
  const tables = h('div', null, loadingBlock('Adding up ops and kernels…'));
  clear(seriesHolder).append(
    section('Over time', `${fmtInt(points.length)} profile${points.length === 1 ? '' : 's'}, oldest first; click a dot to open it.`,
      h('div', {class: 'series-grid'},
        h('div', null, h('h3', null, 'Median step time'),
          seriesChart(points, (p) => (num(p.median_step_ns) > 0 ? num(p.median_step_ns) : null), fmtDuration, 'series-step')),
        h('div', null, h('h3', null, 'Device busy'),
          seriesChart(points, (p) => (p.busy_ratio !== undefined ? Number(p.busy_ratio) : null), fmtPct, 'series-busy')),
        h('div', null, h('h3', null, 'Peak memory'),
          seriesChart(points, (p) => (num(p.peak_memory_bytes) > 0 ? num(p.peak_memory_bytes) : null), fmtBytes, 'series-memory')))),
    ranksSection(points),
    section('Findings across ranks', 'Job rules: a rank whose step time is well above the median of the other ranks.', findings),
    tables);
  page.load(api(apiPath('Diagnose', Object.assign({job}, filter))), findings, 'Could not diagnose the job')
    .then((d) => {
      if (!d) return;
      clear(findings).append(findingsBody(d, (e) => (e.profile_id ? `/profiles/${enc(e.profile_id)}` : null)));
    });
  const sums = await page.load(api(apiPath('JobOps', Object.assign({job}, filter))), tables, 'Could not add up the job');
  if (!sums) return;
  clear(tables).append(
    createFlameGraph({title: 'Flame graph, all profiles',
      explain: `The call trees of the ${fmtInt(sums.profiles)} matching profiles added up. Click a frame to zoom in.`,
      urlFor: (value) => apiPath('GetFlameGraph', Object.assign({job, value}, filter))}),
    section('Kernels, all profiles', `Summed over ${fmtInt(sums.profiles)} profiles: counts and totals add up, min and max fold.`,
      createDataTable({className: 'kernel-table job-kernels', columns: kernelColumns(sums.kernels || []),
                       rows: sums.kernels || [], emptyText: 'No device activity in these profiles.'})),
    section('Ops, all profiles', 'Host ops of every profile added up (key_averages() view).',
      createDataTable({className: 'op-table job-ops', columns: opColumns(), rows: sums.ops || [],
                       emptyText: 'No host ops in these profiles.'})));
}
