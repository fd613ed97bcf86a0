// The session's model, cost and cache hit rate beside the context bar: the figures `nova run` prints
// at the end of a turn, for the whole session (GET /api/sessions/{id}/context, nova/session_figures.py).
'use strict';

function setSessionFigures(report) {
  $('session-model').textContent = report.model ? `${report.provider}/${report.model}` : '';
  $('session-cost').textContent = report.cost_usd == null ? 'cost unknown' : `$${report.cost_usd.toFixed(4)}`;
  $('session-cost').title = report.cost_usd == null
    ? "this session's cost is unknown: the model is not in Nova's price table" : "this session's cost so far";
  $('session-cache').textContent = report.cache_hit_rate == null
    ? 'cache n/a' : `cache ${Math.round(100 * report.cache_hit_rate)}%`;
}
