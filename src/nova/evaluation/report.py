"""One self-contained HTML page for `nova replay --report` and `nova eval --report`.

The plots are plotly figures (`nova.evaluation.report_figures`) with plotly.js inlined once per page: the
file opens offline and loads nothing. Each replay shows its context size per call against the window and
the thresholds with compactions marked, the view's composition by kind, cumulative cost with each call's
cache hit, and every compaction's dropped/kept/added lists; `nova eval` adds, per case, each policy's
context and cost on one chart and the metrics and counterfactuals as tables.

plotly is the optional `report` extra; `require_plotly` says so before any work is done.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from typing import Any

from nova.context.receipt import receipt_line
from nova.errors import NovaError
from nova.evaluation.replay import ReplayReport, unpriced_reason
from nova.evaluation.replay_views import MessageEntry, ViewChange, tokens_of
from nova.evaluation.report_data import ReplaySeries, counterfactual_rows, metric_rows, series_of
from nova.present.text import one_line
from nova.version import install_line

__all__ = ["LIST_LIMIT", "REPORT_INSTALL_LINE", "ReportExtraMissing", "eval_report_html", "replay_report_html",
           "require_plotly"]

REPORT_INSTALL_LINE = install_line("report")
LIST_LIMIT = 200
"""Entries shown per kept/dropped/added list, and compactions shown per replay; the JSON has them all."""


class ReportExtraMissing(NovaError):
    """plotly, which draws the report, is not installed."""


def require_plotly() -> None:
    """Return when plotly imports; raise `ReportExtraMissing` naming the install command otherwise."""
    try:
        import plotly.graph_objects  # noqa: F401
    except ImportError as exc:
        broken = "" if (exc.name or "").startswith("plotly") else f" (importing it failed: {exc})"
        raise ReportExtraMissing(f"--report needs the `report` extra (plotly){broken}: {REPORT_INSTALL_LINE} "
                                 "(in a checkout: pip install -e '.[report]')") from None


_STYLE = """
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; max-width: 1160px;
       margin: 24px auto; padding: 0 20px; color: #222; }
h1 { font-size: 22px; margin-bottom: 8px; } h2 { font-size: 18px; margin-top: 36px; border-bottom: 1px solid #ddd; }
h3 { font-size: 16px; margin-top: 26px; } h4 { font-size: 14px; margin: 14px 0 4px; }
p.note { color: #555; margin: 4px 0 8px; font-size: 14px; }
table { border-collapse: collapse; font-size: 14px; }
th, td { text-align: left; padding: 3px 14px 3px 0; vertical-align: top; }
th { font-weight: 600; }
table.grid td, table.grid th { border-bottom: 1px solid #eee; padding-right: 18px; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.plot { margin: 6px 0 18px; }
details.change { margin: 6px 0; border: 1px solid #e4e4e4; border-radius: 4px; padding: 4px 10px; }
details.change summary { cursor: pointer; }
table.entries { table-layout: fixed; width: 100%; font-size: 13px; }
table.entries col.role { width: 80px; } table.entries col.id { width: 210px; }
table.entries col.kind { width: 100px; } table.entries col.tokens { width: 80px; }
table.entries td { overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
table.entries td.id { overflow-wrap: anywhere; white-space: normal; font-family: ui-monospace, monospace; font-size: 12px; }
"""

_CONFIG = {"displaylogo": False, "responsive": True}


class _Page:
    """Collects the sections of one page; plotly.js goes into the first plot only."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.plots = 0

    def add(self, markup: str) -> None:
        self.parts.append(markup)

    def plot(self, figure: Any, name: str) -> None:
        import plotly.io as pio

        self.plots += 1
        div = pio.to_html(figure, full_html=False, include_plotlyjs=self.plots == 1, config=_CONFIG,
                          div_id=f"plot-{self.plots}", default_width="100%",
                          default_height=f"{figure.layout.height}px")
        self.add(f'<div class="plot" data-figure="{html.escape(name)}">{div}</div>')

    def html(self, title: str) -> str:
        body = "\n".join(self.parts)
        return (f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8">\n'
                f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
                f"<title>{html.escape(title)}</title>\n<style>{_STYLE}</style></head><body>\n"
                f"<h1>{html.escape(title)}</h1>\n{body}\n</body></html>\n")


def _table(rows: Sequence[tuple[str, str]]) -> str:
    return "<table>" + "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in rows) \
        + "</table>"


def _grid(head: Sequence[str], rows: Sequence[Sequence[str]], numeric: Sequence[int] = ()) -> str:
    out = ['<table class="grid"><tr>' + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr>"]
    for row in rows:
        cells = "".join(f'<td{" class=num" if i in numeric else ""}>{html.escape(c)}</td>' for i, c in enumerate(row))
        out.append(f"<tr>{cells}</tr>")
    out.append("</table>")
    return "".join(out)


def _summary_rows(report: ReplayReport) -> list[tuple[str, str]]:
    total = (f"${report.cost_usd:.4f} (input side, summary calls {report.summary_calls_counted})"
             if report.cost_usd is not None
             else f"unknown ({unpriced_reason(report.unpriced_models)})")
    return [("calls", f"{report.calls:,}"), ("input tokens", f"{report.input_tokens:,}"),
            ("peak context", f"{report.peak_context_tokens:,} tokens"),
            ("window / threshold", f"{report.window:,} / {report.threshold:,} tokens"),
            ("compactions", str(report.compactions)),
            ("requests over the window", str(report.requests_over_window)),
            ("cache hit rate", f"{report.cache_hit_rate:.1%}" if report.provider_cache
             else "n/a (no --provider-cache)"),
            ("cost", total)]


def _messages(n: int) -> str:
    return f"{n:,} message" + ("" if n == 1 else "s")


def _entries(title: str, entries: Sequence[MessageEntry]) -> str:
    if not entries:
        return ""
    shown = entries[:LIST_LIMIT]
    more = len(entries) - len(shown)
    rows = "".join(f'<tr><td>{html.escape(e.role)}</td><td class="id">{html.escape(e.id)}</td>'
                   f'<td>{html.escape(e.kind)}</td><td class="num">{e.tokens:,}</td>'
                   f'<td title="{html.escape(e.excerpt)}">{html.escape(e.excerpt)}</td></tr>' for e in shown)
    tail = f'<p class="note">… and {more:,} more (all in --json)</p>' if more else ""
    return (f"<h4>{html.escape(title)} ({_messages(len(entries))}, {tokens_of(entries):,} tokens)</h4>"
            '<table class="entries"><colgroup><col class="role"><col class="id"><col class="kind">'
            '<col class="tokens"><col></colgroup><tr><th>role</th><th>id</th><th>kind</th><th>tokens</th>'
            f"<th>excerpt</th></tr>{rows}</table>{tail}")


def _change(change: ViewChange, calls: int) -> str:
    when = f"call {change.call}" if change.call <= calls else "the final view (after the last call)"
    what = "compaction" + (" (forced)" if change.forced else "") if change.event == "compaction" else change.event
    head = f"{when} · {what}: dropped {_messages(len(change.dropped))} ({tokens_of(change.dropped):,} tokens)"
    if change.event == "compaction":
        head += (f", kept {len(change.kept):,} ({tokens_of(change.kept):,} tokens), added {len(change.added):,} "
                 f"({tokens_of(change.added):,} tokens)")
        lists = (_entries("Dropped: folded into the summary", change.dropped) + _entries("Kept", change.kept)
                 + _entries("Added by Nova", change.added))
    else:
        head += f"; the rest of the view ({_messages(change.view_messages)}) stays"
        lists = _entries("Dropped: cut from the view", change.dropped)
    return f'<details class="change"><summary>{html.escape(head)}</summary>{lists}</details>'


def _changes(report: ReplayReport) -> str:
    changes = report.view_changes
    if not changes:
        return '<p class="note">No compaction or cut: every call sent the whole history.</p>'
    shown = changes[:LIST_LIMIT]
    more = len(changes) - len(shown)
    tail = f'<p class="note">… and {more:,} more (all in --json)</p>' if more else ""
    return "\n".join(_change(c, report.calls) for c in shown) + tail


def _replay_sections(page: _Page, report: ReplayReport, series: ReplaySeries, *, level: int) -> None:
    from nova.evaluation import report_figures as figures

    h = f"h{level}"
    hard = f", the hard line ({series.hard_line:,})" if series.hard_line else ""
    page.add(f"<{h}>Context size per call</{h}><p class=\"note\">Tokens each call sent, against the window "
             f"({series.window:,}), the compaction threshold ({series.threshold:,}){hard}; × and the dotted lines mark "
             "compactions.</p>")
    page.plot(figures.context_figure(series), "context")
    placeholder = (f" The recording lacks part of its fixed prompt: a placeholder of {report.placeholder_tokens:,} "
                   "tokens stands in for it and counts as system." if report.placeholder_tokens else "")
    if report.inlined_placeholder_tokens:
        placeholder += (f" Content the agent inlined into the first user message (an @-mentioned file) is missing "
                        f"too: an estimated stand-in of {report.inlined_placeholder_tokens:,} tokens is part of "
                        "that message.")
    page.add(f"<{h}>What each call's view is made of</{h}><p class=\"note\">Tokens by kind, stacked: they add up "
             "to the context sent. A recording keeps its instruction files inside its system prompt, so rules are "
             f"counted under system (0 here unless Nova itself added them).{placeholder}</p>")
    page.plot(figures.composition_figure(series), "composition")
    cost = (f"cumulative cost of the agent's calls, input side, at {series.price_model} prices" if series.cost_priced
            else "cumulative input tokens (no price given)")
    cache = ("Below: each call's cache reads ÷ its whole input." if series.cache_simulated
             else "No provider cache was simulated (--provider-cache), so there is no cache hit to show.")
    page.add(f"<{h}>Cost and cache hit per call</{h}><p class=\"note\">{html.escape(cost[0].upper() + cost[1:])}. "
             f"{cache}</p>")
    page.plot(figures.cost_figure(series), "cost")
    if report.receipts:
        # The receipt of each compaction, in the words of the CLI line and `nova context`.
        lines = "".join(f"<li>compaction {n}: {html.escape(receipt_line(r))}</li>"
                        for n, r in enumerate(report.receipts, 1))
        page.add(f"<{h}>The receipt of each compaction</{h}><ul class=\"receipts\">{lines}</ul>")
    cuts_only = bool(report.view_changes) and all(c.event == "truncate" for c in report.view_changes)
    heading = "What each cut dropped" if cuts_only else "What each compaction kept and dropped"
    page.add(f"<{h}>{heading}</{h}>{_changes(report)}")


def replay_report_html(report: ReplayReport, *, source: str) -> str:
    """The page for one replay."""
    page = _Page()
    page.add(_table(_summary_rows(report)))
    _replay_sections(page, report, series_of(report), level=2)
    return page.html(f"nova replay: {source} — policy {report.policy}, window {report.window:,}")


def _scenario_sections(page: _Page, scenario: Any) -> None:
    """A scripted memory scenario (`nova.evaluation.scenarios.ScenarioResult`): its metrics, each poisoning
    attempt under Nova and under naive memory, each turn's recall. Tables: nothing in it runs per call."""
    page.add(f"<h2>Scenario {html.escape(scenario.case)}</h2>")
    rows = metric_rows({"value": scenario.metrics})
    page.add(_grid(["metric", "unit", "value"], [[name.replace("_", " "), unit, *cells] for name, unit, cells in rows]))
    data = scenario.to_json()
    attempts = data.get("poisoning") or []
    if attempts:
        page.add("<h3>Poisoning attempts</h3>")
        page.add(_grid(["attempt", "channel", "Nova", "naive memory"], [
            [str(a.get("attempt", "")), str(a.get("channel", "")),
             ("poisoned" if a.get("poisoned") else "held") + (f": {a['how']}" if a.get("how") else ""),
             ("poisoned" if a.get("naive_poisoned") else "held") + (f": {a['naive_how']}" if a.get("naive_how") else "")]
            for a in attempts]))
    turns = data.get("memory_turns") or []
    if turns:
        page.add("<h3>Memory turns</h3>")
        page.add(_grid(["turn", "asked", "recalled", "answered by", "recall ms"], [
            [str(t.get("turn", "")), one_line(str(t.get("ask", "")), 100), ", ".join(t.get("recalled") or []) or "none",
             str(t.get("answered_by", "")), f"{t.get('recall_ms', 0):.1f}"] for t in turns], numeric=(4,)))


def _case_runs(results: Sequence[Any]) -> list[tuple[str, list[Any]]]:
    """The results of each case, in the order they ran. A case's policies run one after the other, so a
    case ends where the name changes or a policy comes again: two cases may share a name (the same session
    at two windows) and must not be drawn as one."""
    cases: list[tuple[str, list[Any]]] = []
    for result in results:
        if not cases or cases[-1][0] != result.case or any(r.policy == result.policy for r in cases[-1][1]):
            cases.append((result.case, []))
        cases[-1][1].append(result)
    return cases


def eval_report_html(results: Sequence[Any], *, source: str, scenarios: Sequence[Any] = ()) -> str:
    """The page for `nova eval`: per case, the policies side by side, then each policy's replay; then the
    scripted memory scenarios as tables. `results` are `nova.evaluation.run.CaseResult`s in the order they
    ran (a case's policies together), `scenarios` `nova.evaluation.scenarios.ScenarioResult`s."""
    from nova.evaluation import report_figures as figures

    page = _Page()
    cases = _case_runs(results)
    if cases:
        # Each policy's own window: one the recording's fixed prompt left no room in was raised for it.
        page.add(_grid(["case", "policies", "calls", "window"],
                       [[name, ", ".join(r.policy for r in rs), f"{rs[0].report.calls:,}",
                         ", ".join(f"{w:,}" for w in dict.fromkeys(r.window for r in rs))]
                        for name, rs in cases], numeric=(2, 3)))
    anchors: set[str] = set()
    for index, (name, runs) in enumerate(cases, start=1):
        anchor = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or str(index)
        anchor = anchor if anchor not in anchors else f"{anchor}-{index}"
        anchors.add(anchor)
        page.add(f'<h2 id="case-{html.escape(anchor)}">Case {html.escape(name)}</h2>')
        page.add(_grid(["policy", "calls", "peak context", "compactions", "over the window", "cost"],
                       [[r.policy, f"{r.report.calls:,}", f"{r.report.peak_context_tokens:,}",
                         str(r.report.compactions), str(r.report.requests_over_window),
                         "n/a" if r.report.cost_usd is None else f"${r.report.cost_usd:.4f}"] for r in runs],
                       numeric=(1, 2, 3, 4, 5)))
        series = [series_of(r.report) for r in runs]
        if len(runs) > 1:
            page.add("<h3>Context size per call, policy against policy</h3>")
            page.plot(figures.policy_context_figure(series), "policy-context")
            page.add("<h3>Cumulative cost, policy against policy</h3>")
            page.plot(figures.policy_cost_figure(series), "policy-cost")
        page.add('<h3>Metrics</h3><p class="note">Measured on the final view of each replay; each with its '
                 "unit.</p>")
        rows = metric_rows({r.policy: r.metrics for r in runs})
        page.add(_grid(["metric", "unit", *(r.policy for r in runs)],
                       [[name.replace("_", " "), unit, *cells] for name, unit, cells in rows]))
        for r in runs:
            if r.baseline_run is not None and r.counterfactuals:
                page.add(f"<h3>Counterfactuals, policy {html.escape(r.policy)}</h3>")
                page.add(_grid(["change", "what changed in the view", "tokens", "metrics", "answer"],
                               counterfactual_rows(r.counterfactuals), numeric=(2,)))
        for r, s in zip(runs, series, strict=True):
            page.add(f"<h3>Policy {html.escape(r.policy)}</h3>")
            _replay_sections(page, r.report, s, level=4)
    for scenario in scenarios:
        _scenario_sections(page, scenario)
    return page.html(f"nova eval: {source}")
