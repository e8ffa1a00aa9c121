// fleetprof web app — the fleet page (/fleet): where the fleet's device-time went
// (fleet-accounting.js), then agents, their targets and their devices now.

import {api, apiPath, badge, clear, clearBanner, emptyBlock, enc, exactTitle, fmtAgo, fmtBytes, fmtInt, fmtPct, h, isoDate, loadingBlock, num, showError, stat, urlWith} from './core.js';
import {fleetAccountingCard} from './fleet-accounting.js';
import {poll} from './poll.js';

const FLEET_REFRESH_MS = 2000;

function targetLine(target, node) {
  return h('div', {class: 'target-line'},
    h('span', {class: `tag kind-${target.kind}`}, target.kind || '?'),
    target.job ? h('a', {href: `/jobs/${enc(target.job)}`, class: 'target-job'}, target.job) : h('span', {class: 'muted'}, 'no job'),
    num(target.pid) ? h('span', {class: 'mono muted'}, `pid ${target.pid}`) : null,
    target.address ? h('span', {class: 'mono muted'}, target.address) : null,
    target.job ? h('a', {class: 'mini-link', href: urlWith('/captures', {job: target.job, node}),
                         title: `Capture job ${target.job} on ${node}`}, 'capture…') : null);
}

// One device of a node: memory used / total as a meter, and utilization.
function liveDevice(sample) {
  const used = num(sample.memory_used_bytes);
  const total = num(sample.memory_total_bytes);
  const util = sample.has_utilization ? Number(sample.utilization_ratio) || 0 : null;
  return h('div', {class: 'live-device', 'data-device': sample.device,
                   title: `${sample.model || ''} ${sample.uuid || ''}\nsampled ${fmtAgo(sample.sampled_at_ns)}`},
    h('span', {class: 'live-device-name'}, h('b', null, sample.device), ' ', h('span', {class: 'muted'}, sample.model || '')),
    h('span', {class: 'meter', title: `${fmtInt(used)} of ${fmtInt(total)} bytes`},
      h('span', {class: 'meter-fill', style: `width:${total > 0 ? (100 * used / total).toFixed(1) : 0}%`})),
    h('span', {class: 'num live-mem'}, `${fmtBytes(used)} / ${fmtBytes(total)}`),
    h('span', {class: 'num live-util'}, util === null ? 'util –' : `util ${fmtPct(util)}`),
    util === null ? null : h('span', {class: 'meter util'},
      h('span', {class: 'meter-fill', style: `width:${(100 * Math.min(1, Math.max(0, util))).toFixed(1)}%`})));
}

function agentRow(agent) {
  const targets = agent.targets || [];
  const devices = agent.devices || [];
  return h('tr', {class: 'agent-row', 'data-node': agent.node},
    h('td', null, h('b', null, agent.node)),
    h('td', null, badge(agent.state)),
    h('td', {class: 'num', title: `${isoDate(agent.last_seen_ns)} (${exactTitle(agent, 'last_seen_ns')})`},
      fmtAgo(agent.last_seen_ns)),
    h('td', {class: 'mono muted'}, agent.version || '–'),
    h('td', null, targets.length ? targets.map((t) => targetLine(t, agent.node)) : h('span', {class: 'muted'}, 'no targets')),
    h('td', null, devices.length ? devices.map(liveDevice) : h('span', {class: 'muted'}, 'no device readings')));
}

function agentsTable(agents) {
  const sorted = agents.slice().sort((a, b) =>
    (a.state === 'CONNECTED' ? 0 : 1) - (b.state === 'CONNECTED' ? 0 : 1) || String(a.node).localeCompare(String(b.node)));
  return h('div', {class: 'table-scroll'},
    h('table', {class: 'data-table agents-table'},
      h('thead', null, h('tr', null, ['Node', 'State', 'Last seen', 'Version', 'Targets', 'Devices']
        .map((t) => h('th', {scope: 'col', class: t === 'Last seen' ? 'num' : null}, t)))),
      h('tbody', null, sorted.map(agentRow))));
}

function fleetStats(agents) {
  const connected = agents.filter((a) => a.state === 'CONNECTED').length;
  const targets = agents.reduce((s, a) => s + (a.targets || []).length, 0);
  const devices = agents.flatMap((a) => a.devices || []);
  const used = devices.reduce((s, d) => s + num(d.memory_used_bytes), 0);
  const total = devices.reduce((s, d) => s + num(d.memory_total_bytes), 0);
  return h('div', {class: 'stat-row'},
    stat('agents', fmtInt(agents.length)), stat('connected', fmtInt(connected)),
    stat('targets', fmtInt(targets)), stat('devices', fmtInt(devices.length)),
    stat('device memory', total > 0 ? `${fmtBytes(used)} / ${fmtBytes(total)}` : '–'));
}

export async function renderFleetPage(page) {
  const holder = h('div', null, loadingBlock('Loading agents…'));
  const updated = h('span', {class: 'refresh-note muted', id: 'fleet-updated'});
  page.main.append(
    h('div', {class: 'page-head'}, h('h1', null, 'Fleet'),
      h('p', {class: 'explain'}, 'Where the fleet\'s device-time went, from the sampled profiles; then the node ' +
        'agents connected to this server, the processes they can capture and ' +
        'their devices right now (memory used / total and utilization). Refreshes every 2 s. '), updated),
    fleetAccountingCard(page),
    h('section', {class: 'card'}, h('div', {class: 'card-head'}, h('h2', null, 'Agents')), holder));
  let failing = false;
  await poll(page, {
    request: () => api(apiPath('ListAgents')),
    onError: (err) => {
      showError(err, 'Could not list agents');
      failing = true;
      if (holder.querySelector('.loading')) clear(holder).append(emptyBlock('Agents could not be loaded; retrying…'));
      return FLEET_REFRESH_MS;
    },
    onValue: (data) => {
      if (failing) clearBanner();
      failing = false;
      const agents = (data && data.agents) || [];
      clear(holder).append(fleetStats(agents),
        agents.length ? agentsTable(agents) : emptyBlock(['No agent has connected yet. Start ', h('code', null, 'fleetprof-agent --server HOST:7070'), ' on a node.']));
      updated.textContent = `Updated ${new Date().toLocaleTimeString()}`;
      return FLEET_REFRESH_MS;
    },
  }).done;
}
