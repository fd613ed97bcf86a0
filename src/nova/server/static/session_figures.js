// The session's model, cost and cache hit rate beside the context bar: the figures `nova run` prints
// at the end of a turn, for the whole session (GET /api/sessions/{id}/context, nova/session_figures.py).
// The cost line names the model calls behind it by purpose; the tooltip gives each one's tokens and cost.
'use strict';

const PURPOSE_LABELS = {turn: 'turn', compaction: 'summary', memory_extraction: 'memory', memory_recall: 'recall',
                        subagent: 'sub-agent'};

function callsBrief(calls) {
  const parts = Object.entries(calls || {}).map(([p, c]) => `${c.calls} ${PURPOSE_LABELS[p] || p}`);
  return parts.length ? `calls ${parts.join(' + ')}` : '';
}

function callsDetail(calls) {
  return Object.entries(calls || {}).map(([p, c]) => `${PURPOSE_LABELS[p] || p}: ${c.calls} call${c.calls === 1 ? '' : 's'}, `
    + `${c.tokens.toLocaleString('en-US')} tokens, ${c.cost_usd == null ? 'cost unknown' : `$${c.cost_usd.toFixed(4)}`}`).join('\n');
}

function setSessionFigures(report) {
  $('session-model').textContent = report.model ? `${report.provider}/${report.model}` : '';
  const cost = report.cost_usd == null ? 'cost unknown' : `$${report.cost_usd.toFixed(4)}`;
  const brief = callsBrief(report.calls);
  $('session-cost').textContent = brief ? `${cost} · ${brief}` : cost;
  const said = report.cost_usd == null
    ? "this session's cost is unknown: a call's model is not in Nova's price table" : "this session's cost so far";
  const detail = callsDetail(report.calls);
  $('session-cost').title = detail ? `${said}\n${detail}` : said;
  $('session-cache').textContent = report.cache_hit_rate == null
    ? 'cache n/a' : `cache ${Math.round(100 * report.cache_hit_rate)}%`;
}
