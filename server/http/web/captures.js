// fleetprof web app — captures (/captures, /captures?capture=ID): start a capture, follow it
// live, list recent ones.

import {api, ApiError, apiPath, badge, clear, clearBanner, emptyBlock, enc, errorBlock, fmtDate, fmtDuration, fmtInt, h, isoDate, loadingBlock, num, query, section, setQuery, showError, urlWith} from './core.js';
import {poll} from './poll.js';

const CAPTURE_POLL_MS = 500;
const TARGET_STEPS = ['PENDING', 'RUNNING', 'UPLOADING', 'INDEXED'];

function captureForm(q, onStarted) {
  const field = (id, label, attrs) => h('label', {class: 'field'}, h('span', null, label), h('input', Object.assign({id}, attrs)));
  const submit = h('button', {type: 'submit', id: 'capture-submit', class: 'btn primary'}, 'Start capture');
  const form = h('form', {class: 'filters capture-form', id: 'capture-form', novalidate: true},
    field('capture-job', 'Job (required)', {type: 'text', name: 'job', value: q.get('job') || '', placeholder: 'e.g. resnet-train', size: 20}),
    field('capture-node', 'Node', {type: 'text', name: 'node', value: q.get('node') || '', placeholder: 'all nodes', size: 16}),
    field('capture-duration', 'Duration (ms)', {type: 'number', name: 'duration_ms', min: 0, step: 1, placeholder: 'default', size: 8}),
    field('capture-iterations', 'Iterations', {type: 'number', name: 'iterations', min: 0, step: 1, placeholder: 'Kineto only', size: 8}),
    h('div', {class: 'field-actions'}, submit));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const value = (id) => form.querySelector(`#${id}`).value.trim();
    const body = {job: value('capture-job')};
    if (!body.job) {
      showError(new ApiError('INVALID_ARGUMENT', 'name the job to capture', 0));
      form.querySelector('#capture-job').focus();
      return;
    }
    if (value('capture-node')) body.node = value('capture-node');
    for (const [id, key] of [['capture-duration', 'duration_ms'], ['capture-iterations', 'iterations']]) {
      if (!value(id)) continue;
      if (!/^\d+$/.test(value(id))) {
        showError(new ApiError('INVALID_ARGUMENT', `${key} must be a non-negative integer`, 0));
        return;
      }
      body[key] = Number(value(id));
    }
    submit.disabled = true;
    submit.textContent = 'Starting…';
    try {
      clearBanner();
      onStarted(await api(apiPath('StartCapture', {}, 'POST'), {method: 'POST', body}));
    } catch (err) {
      showError(err, 'Could not start the capture');
    } finally {
      submit.disabled = false;
      submit.textContent = 'Start capture';
    }
  });
  return form;
}

// PENDING → RUNNING → UPLOADING → INDEXED as dots, the current one highlighted.
function targetProgress(state) {
  const reached = state === 'FAILED' ? -1 : TARGET_STEPS.indexOf(state);
  return h('span', {class: 'progress', 'aria-hidden': 'true'}, TARGET_STEPS.map((s, i) =>
    h('span', {class: `progress-step ${i < reached ? 'done' : i === reached ? 'current' : ''}`.trim(), title: s})));
}

function captureTargetRow(t) {
  const state = t.state || 'PENDING';
  const detail = [];
  if (t.profile_id) detail.push(h('a', {href: `/profiles/${enc(t.profile_id)}`, class: 'profile-link mono'}, t.profile_id));
  if (t.error) detail.push(h('span', {class: 'target-error'}, t.error));
  return h('tr', {class: `capture-target state-${state.toLowerCase()}`, 'data-target': t.target, 'data-node': t.node},
    h('td', null, t.node || '–'),
    h('td', {class: 'mono'}, t.target || '–'),
    h('td', null, t.job || '–'),
    h('td', null, h('span', {class: `badge target-state badge-${state.toLowerCase()}`}, state), ' ', targetProgress(state)),
    h('td', {class: 'target-detail'}, detail.length ? detail : h('span', {class: 'muted'}, '–')));
}

function captureView(capture) {
  const request = capture.request || {};
  const targets = capture.targets || [];
  const indexed = targets.filter((t) => t.state === 'INDEXED').length;
  const running = capture.state === 'RUNNING';
  const elapsed = num(capture.created_at_ns) ? (Date.now() - num(capture.created_at_ns) / 1e6) * 1e6 : 0;
  const meta = [
    ['Job', request.job || '–'], ['Node', request.node || 'all'],
    ['Duration', num(request.duration_ms) ? fmtDuration(num(request.duration_ms) * 1e6) : '–'],
    ['Iterations', num(request.iterations) ? fmtInt(request.iterations) : '–'],
    ['Created', h('span', {title: isoDate(capture.created_at_ns)}, fmtDate(capture.created_at_ns))],
    ['Targets', `${indexed} of ${targets.length} indexed`],
    running && elapsed > 0 ? ['Running for', fmtDuration(Math.round(elapsed))] : null,
  ].filter(Boolean);
  return h('section', {class: 'card capture-view', 'data-capture-id': capture.capture_id, 'data-state': capture.state},
    h('div', {class: 'profile-title'},
      h('h2', null, 'Capture ', h('span', {class: 'mono', id: 'capture-id'}, capture.capture_id), ' ',
        h('span', {class: `badge capture-state badge-${String(capture.state).toLowerCase()}`}, capture.state || '?')),
      running ? h('span', {class: 'live'}, h('span', {class: 'spinner'}), 'live') : null),
    h('dl', {class: 'meta-grid'}, meta.map(([k, v]) => h('div', {class: 'meta'}, h('dt', null, k), h('dd', null, v)))),
    capture.error ? h('div', {class: 'notice error-notice capture-error'}, capture.error) : null,
    indexed > 0 && request.job ? h('div', {class: 'link-row'}, h('a', {class: 'btn job-trace-link',
      href: urlWith(`/jobs/${enc(request.job)}/trace`, {capture: capture.capture_id})}, 'All ranks on one clock →')) : null,
    targets.length ? h('div', {class: 'table-scroll'}, h('table', {class: 'data-table capture-targets'},
      h('thead', null, h('tr', null, ['Node', 'Target', 'Job', 'State', 'Profile / reason'].map((t) => h('th', {scope: 'col'}, t)))),
      h('tbody', null, targets.map(captureTargetRow)))) : emptyBlock('This capture has no targets.'));
}

// Why a capture ran; one stored before reasons were kept was a schedule's run or a user's.
function captureReason(c) {
  const reason = c.reason || (c.schedule_id ? 'SCHEDULED' : 'MANUAL');
  return reason.charAt(0) + reason.slice(1).toLowerCase();
}

function capturesTable(captures) {
  return h('div', {class: 'table-scroll'}, h('table', {class: 'data-table captures-table'},
    h('thead', null, h('tr', null, ['Capture', 'Job', 'Why', 'State', 'Targets', 'Schedule', 'Created'].map((t) =>
      h('th', {scope: 'col', class: t === 'Created' || t === 'Targets' ? 'num' : null}, t)))),
    h('tbody', null, captures.map((c) => {
      const targets = c.targets || [];
      const indexed = targets.filter((t) => t.state === 'INDEXED').length;
      return h('tr', {class: 'capture-row', 'data-capture-id': c.capture_id},
        h('td', {class: 'mono'}, h('a', {href: urlWith('/captures', {capture: c.capture_id})}, c.capture_id)),
        h('td', null, (c.request && c.request.job) || '–'),
        h('td', {title: c.evidence || null, class: 'capture-reason'}, captureReason(c)),
        h('td', {title: c.error || null}, badge(c.state), c.state === 'SKIPPED' ? h('span', {class: 'muted skip-reason'}, ` ${c.error}`) : null),
        h('td', {class: 'num'}, `${indexed} / ${targets.length}`),
        h('td', {class: 'mono'}, c.schedule_id || '–'),
        h('td', {class: 'num', title: isoDate(c.created_at_ns)}, fmtDate(c.created_at_ns)));
    }))));
}

// "30m", "2h", "45s", "1500ms" → milliseconds, or NaN.
function parseEvery(text) {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)\s*$/.exec(text || '');
  if (!m) return NaN;
  return Math.round(Number(m[1]) * {ms: 1, s: 1e3, m: 6e4, h: 3.6e6}[m[2]]);
}

// Periodic captures kept by the server: the list, a form to add one, a button to remove one.
function schedulesSection(page) {
  const list = h('div', null, loadingBlock('Loading schedules…'));
  const load = async () => {
    const data = await page.load(api(apiPath('ListSchedules')), list, 'Could not list schedules');
    if (!data) return;
    const schedules = data.schedules || [];
    clear(list).append(schedules.length ? h('div', {class: 'table-scroll'}, h('table', {class: 'data-table schedules-table'},
      h('thead', null, h('tr', null, ['Schedule', 'Job', 'Every', 'Duration', 'Runs', 'Skipped', 'Next run', 'Last', ''].map((t) =>
        h('th', {scope: 'col'}, t)))),
      h('tbody', null, schedules.map((s) => h('tr', {class: 'schedule-row', 'data-schedule-id': s.schedule_id},
        h('td', {class: 'mono'}, s.schedule_id),
        h('td', null, s.job, s.node ? h('span', {class: 'muted'}, ` @${s.node}`) : null),
        h('td', {class: 'num'}, fmtDuration(num(s.every_ms) * 1e6)),
        h('td', {class: 'num'}, fmtDuration(num(s.duration_ms) * 1e6)),
        h('td', {class: 'num'}, fmtInt(num(s.runs))),
        h('td', {class: 'num'}, fmtInt(num(s.skipped))),
        h('td', {class: 'num', title: isoDate(s.next_run_ns)}, fmtDate(s.next_run_ns)),
        h('td', null, s.last_capture_id ? h('a', {class: 'mono', href: urlWith('/captures', {capture: s.last_capture_id})}, s.last_capture_id) : '–',
          s.last_outcome ? h('div', {class: 'muted'}, s.last_outcome) : null),
        h('td', null, h('button', {type: 'button', class: 'btn', onclick: async () => {
          try {
            await api(apiPath('DeleteSchedule', {schedule_id: s.schedule_id}, 'DELETE'), {method: 'DELETE'});
          } catch (err) {
            return showError(err, 'Could not remove the schedule');
          }
          load();
        }}, 'Remove')))))))
      : emptyBlock('No schedule. Add one to capture a job every few minutes, so its time series fills by itself.'));
  };
  const job = h('input', {type: 'text', id: 'schedule-job', placeholder: 'job', size: 16});
  const every = h('input', {type: 'text', id: 'schedule-every', placeholder: '30m', size: 7, value: '30m'});
  const duration = h('input', {type: 'text', id: 'schedule-duration', placeholder: '2000', size: 7, value: '2000', inputmode: 'numeric'});
  const form = h('form', {class: 'filters', id: 'schedule-form'},
    h('label', {class: 'field'}, h('span', null, 'Job'), job),
    h('label', {class: 'field'}, h('span', null, 'Every (s, m, h)'), every),
    h('label', {class: 'field'}, h('span', null, 'Duration ms'), duration),
    h('div', {class: 'field-actions'}, h('button', {type: 'submit', class: 'btn'}, 'Add schedule')));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const everyMs = parseEvery(every.value);
    if (!job.value.trim()) return showError(new ApiError('INVALID_ARGUMENT', 'a schedule needs a job', 0));
    if (!Number.isFinite(everyMs)) return showError(new ApiError('INVALID_ARGUMENT', `“${every.value}” is not a period such as 30m, 2h or 45s`, 0));
    try {
      await api(apiPath('CreateSchedule', {}, 'POST'), {method: 'POST', body: {job: job.value.trim(), every_ms: everyMs,
                                                            duration_ms: Number(duration.value) || 0}});
    } catch (err) {
      return showError(err, 'Could not add the schedule');
    }
    load();
  });
  load();
  return section('Schedules', 'Captures the server starts by itself, every period. A run due while a capture of the ' +
    'job is still running, or missed while the server was down, is skipped (see its SKIPPED capture).', form, list);
}

export async function renderCapturesPage(page) {
  const q = query();
  const current = h('div', {class: 'capture-current'});
  const recent = h('div', null, loadingBlock('Loading recent captures…'));

  const loadRecent = async () => {
    let data;
    try {
      data = await api(apiPath('ListCaptures'));
    } catch (err) {
      if (page.alive()) {
        showError(err, 'Could not list captures');
        clear(recent).append(emptyBlock('Recent captures could not be loaded.'));
      }
      return;
    }
    if (!page.alive()) return;
    const captures = (data && data.captures) || [];
    clear(recent).append(captures.length ? capturesTable(captures) : emptyBlock('No capture yet.'));
  };

  // Shows the capture and polls it every 500 ms while it is RUNNING.
  let following = null;
  const follow = (capture) => {
    if (following) following.stop();
    following = null;
    const show = (c) => clear(current).append(captureView(c));
    if (capture.state) show(capture);
    else clear(current).append(loadingBlock(`Loading capture ${capture.capture_id}…`));
    if (capture.state && capture.state !== 'RUNNING') {
      loadRecent();
      return;
    }
    following = poll(page, {
      delay: capture.state ? CAPTURE_POLL_MS : 0,
      request: () => api(apiPath('GetCapture', {capture_id: capture.capture_id})),
      onError: (err) => {
        showError(err, `Could not read capture ${capture.capture_id}`);
        // The server or the network may come back; a 4xx (no such capture) will not.
        if (err.status >= 500 || err.status === 0) return 4 * CAPTURE_POLL_MS;
        if (!current.querySelector('.capture-view')) {
          clear(current).append(h('section', {class: 'card'}, errorBlock(err, `Could not read capture ${capture.capture_id}`)));
        }
        return null;
      },
      onValue: (c) => {
        show(c);
        if (c.state === 'RUNNING') return CAPTURE_POLL_MS;
        loadRecent();
        return null;
      },
    });
  };

  const form = captureForm(q, (capture) => {
    setQuery({capture: capture.capture_id, job: null, node: null}, true);
    follow(capture);
    loadRecent();
  });
  page.main.append(
    h('div', {class: 'page-head'}, h('h1', null, 'Captures'),
      h('p', {class: 'explain'}, 'Capture every process of a job (optionally on one node) at one shared start time. ' +
        'Each target moves PENDING → RUNNING → UPLOADING → INDEXED, or FAILED with a reason.')),
    h('section', {class: 'card'}, form),
    current,
    section('Recent captures', null, recent),
    schedulesSection(page));

  if (q.get('capture')) follow({capture_id: q.get('capture')});
  await loadRecent();
}
