// fleetprof web app — diagnosis findings (GET …/diagnosis): one card per finding with what the
// rule measured against which threshold, the suggestion, and its evidence as links into the
// trace viewer's time range. Used by the profile page and the job page.

import {api, apiPath, clear, emptyBlock, enc, exactInt, fmtDuration, fmtPct, h, loadingBlock, section, urlWith} from './core.js';

// A trace-viewer link to [start, end) of a profile (absolute trace-clock ns), padded so that a
// short range is seen in context.
function traceRangeLink(profileId, evidence) {
  const start = exactInt(evidence, 'start_ns');
  const end = exactInt(evidence, 'end_ns');
  if (start === null || end === null) return null;
  const length = end > start ? end - start : 1n;
  const pad = length / 10n > 1000n ? length / 10n : 1000n;
  return urlWith(`/profiles/${enc(profileId)}/trace`, {start_ns: (start > pad ? start - pad : 0n).toString(),
                                                        end_ns: (end + pad).toString()});
}

function ruleMetricText(finding, rule) {
  const unit = rule ? rule.unit : '';
  const fmt = (v) => (unit === 'ns' ? fmtDuration(Math.round(v)) :
    /share|ratio/.test(unit) && v <= 1 ? fmtPct(v) : Number(v.toPrecision(4)).toString());
  const comparison = rule && rule.comparison === 'below' ? 'under' : 'at or over';
  return `${fmt(Number(finding.metric))} ${unit && unit !== 'ns' ? `(${unit}) ` : ''}· ${comparison} threshold ${fmt(Number(finding.threshold))}`;
}

function findingCard(finding, rules, link) {
  const rule = rules.find((r) => r.rule === finding.rule);
  return h('article', {class: `finding severity-${finding.severity}`, 'data-rule': finding.rule},
    h('div', {class: 'finding-head'},
      h('span', {class: `tag severity-tag severity-${finding.severity}`}, finding.severity),
      h('b', {class: 'finding-rule mono'}, finding.rule),
      h('span', {class: 'finding-summary'}, finding.summary)),
    h('p', {class: 'finding-metric muted'}, ruleMetricText(finding, rule)),
    h('p', {class: 'finding-suggestion'}, finding.suggestion),
    (finding.evidence || []).length ? h('ul', {class: 'evidence'}, finding.evidence.map((e) => {
      const href = link(e);
      const length = exactInt(e, 'end_ns') - exactInt(e, 'start_ns');
      const text = [h('span', {class: 'mono'}, e.track), ` · ${fmtDuration(Number(length))}`, e.note ? ` · ${e.note}` : ''];
      return h('li', null, href ? h('a', {href, class: 'evidence-link'}, text) : text);
    })) : null,
    rule ? h('details', {class: 'rule-definition'}, h('summary', null, 'How this is measured'),
      h('p', null, rule.definition), h('p', {class: 'muted'}, `Default threshold: ${rule.source}.`)) : null);
}

// The findings of a diagnosis, or a line saying every rule passed.
export function findingsBody(diagnosis, link) {
  const findings = diagnosis.findings || [];
  const rules = diagnosis.rules || [];
  return h('div', {class: 'findings', id: 'findings'},
    diagnosis.note ? h('div', {class: 'notice'}, diagnosis.note) : null,
    findings.length ? findings.map((f) => findingCard(f, rules, link)) :
      emptyBlock(`No findings: all ${rules.length} rules are within their thresholds.`),
    h('details', {class: 'rules-list'}, h('summary', null, `Rules checked (${rules.length})`),
      h('ul', null, rules.map((r) => h('li', null, h('b', {class: 'mono'}, r.rule), ` — ${r.definition}`)))));
}

// The profile page's findings section, filled in once the diagnosis arrives.
export function profileFindingsSection(page, profileId) {
  const body = h('div', null, loadingBlock('Running the diagnosis rules…'));
  const card = section('Findings', 'Named rules over this profile’s events (idle device, tiny kernels, ' +
    'host-device syncs, compilation, memory, communication…), each with its evidence: follow a link to see ' +
    'the time range in the trace viewer.', body);
  card.id = 'findings-section';
  page.load(api(apiPath('Diagnose', {profile_id: profileId})), body, 'Could not diagnose the profile')
    .then((diagnosis) => {
      if (!diagnosis) return;
      clear(body).append(findingsBody(diagnosis, (e) => traceRangeLink(profileId, e)));
    });
  return card;
}
