"""The report's plots, drawn with plotly from `nova.evaluation.report_data` series.

Each function returns a `plotly.graph_objects.Figure`; `nova.evaluation.report` puts them in one page.
Only the report imports this module, and only when a report is asked for: plotly is the optional `report`
extra, and the `nova` command starts without it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from nova.evaluation.replay_views import COMPOSITION_KINDS
from nova.evaluation.report_data import ReplaySeries

__all__ = ["KIND_COLOURS", "composition_figure", "context_figure", "cost_figure", "policy_context_figure",
           "policy_cost_figure"]

# The context picture's colours (nova.context.picture.STYLES) as web colours; observations are white on a
# terminal, grey here, where the page is white.
KIND_COLOURS = {"system": "#1f4e9c", "tools": "#9b30a8", "rules": "#d9a400", "memory": "#17a2b8",
                "history": "#2ca02c", "summary": "#0b5d1e", "observations": "#8c8c8c"}
POLICY_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf")
WINDOW_COLOUR, THRESHOLD_COLOUR, HARD_COLOUR, COMPACTION_COLOUR = "#444444", "#ff7f0e", "#d62728", "#d62728"
HEIGHT = 380
# Up to this many calls each call is drawn as a point too (a one-call session would show no line at all),
# and the composition as stacked bars; beyond it, lines and stacked areas read better.
FEW_CALLS = 60
FONT = {"family": "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif", "size": 13, "color": "#222"}


def _layout(fig: go.Figure, *, y_title: str, calls: int, height: int = HEIGHT, legend_rows: int = 1) -> go.Figure:
    fig.update_layout(
        template="plotly_white", height=height, font=FONT, hovermode="x unified", showlegend=True,
        margin={"l": 70, "r": 24, "t": 12 + 24 * legend_rows, "b": 48},
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "x": 0, "font": {"size": 12}},
    )
    # Calls are whole: a few get a tick each (automatic ticks would step by 0.2); more get plotly's own,
    # which follow a zoom.
    fig.update_xaxes(title_text="call", tickfont={"size": 12}, range=[0.5, max(calls, 1) + 0.5],
                     unifiedhovertitle={"text": "call %{x}"},
                     **({"dtick": 1} if calls <= 12 else {}))
    fig.update_yaxes(title_text=y_title, tickfont={"size": 12}, rangemode="tozero")
    return fig


def _marks(fig: go.Figure, calls: Sequence[int], **where: Any) -> None:
    """A thin vertical line before each compacted call: the compaction happened between the two calls
    (and so the line stays clear of that call's bar)."""
    for call in calls:
        fig.add_vline(x=call - 0.5, line={"color": COMPACTION_COLOUR, "width": 1, "dash": "dot"}, opacity=0.5, **where)


def _level(fig: go.Figure, n: int, value: int, name: str, colour: str, dash: str, **where: Any) -> None:
    fig.add_trace(go.Scatter(x=[0.5, max(n, 1) + 0.5], y=[value, value], mode="lines", name=f"{name} {value:,}",
                             line={"color": colour, "dash": dash, "width": 1.5}, hoverinfo="skip"), **where)


def context_figure(s: ReplaySeries) -> go.Figure:
    """Context size per call against the window, the threshold and the hard line, compactions marked."""
    fig = go.Figure()
    calls = list(s.calls)
    fig.add_trace(go.Scatter(x=calls, y=list(s.context), mode=_mode(len(calls)), name="context sent",
                             line={"color": "#1f77b4", "width": 2}, customdata=_call_details(s),
                             hovertemplate="%{y:,} tokens%{customdata}<extra>context</extra>"))
    _level(fig, len(calls), s.window, "window", WINDOW_COLOUR, "dash")
    _level(fig, len(calls), s.threshold, "threshold", THRESHOLD_COLOUR, "dash")
    if s.hard_line:
        _level(fig, len(calls), s.hard_line, "hard line", HARD_COLOUR, "dot")
    if s.compactions:
        fig.add_trace(go.Scatter(x=list(s.compactions), y=[s.context[c - 1] for c in s.compactions], mode="markers",
                                 name="compaction", marker={"symbol": "x", "size": 9, "color": COMPACTION_COLOUR},
                                 hovertemplate="compacted: %{y:,} tokens sent<extra></extra>"))
    _marks(fig, s.compactions)
    return _layout(fig, y_title="tokens", calls=len(calls))


def composition_figure(s: ReplaySeries) -> go.Figure:
    """The view of each call stacked by kind."""
    fig = go.Figure()
    calls = list(s.calls)
    for kind in COMPOSITION_KINDS:
        values = list(s.composition[kind])
        name = kind
        if kind == "rules" and not any(values):
            name = "rules (0: inside the recorded system prompt)"
        hover = f"%{{y:,}}<extra>{kind}</extra>"
        if len(calls) <= FEW_CALLS:
            fig.add_trace(go.Bar(x=calls, y=values, name=name, marker={"color": KIND_COLOURS[kind]},
                                 hovertemplate=hover))
        else:
            fig.add_trace(go.Scatter(x=calls, y=values, mode="lines", name=name, stackgroup="view",
                                     line={"width": 0.5, "color": KIND_COLOURS[kind]}, hovertemplate=hover))
    fig.update_layout(barmode="stack", bargap=0.15, legend={"traceorder": "normal"})
    _marks(fig, s.compactions)
    return _layout(fig, y_title="tokens", calls=len(calls))


def cost_figure(s: ReplaySeries) -> go.Figure:
    """Cumulative cost (or input tokens without a price) above, each call's cache hit below; without a
    simulated provider cache, the cost alone and a line saying why the cache hit is missing."""
    calls = list(s.calls)
    unit = f"USD ({s.price_model})" if s.cost_priced else "input tokens"
    shown = ".4f" if s.cost_priced else ",.0f"
    money = "$" if s.cost_priced else ""
    cumulative = go.Scatter(
        x=calls, y=list(s.cumulative), mode=_mode(len(calls)),
        name="cumulative " + ("cost" if s.cost_priced else "input"), line={"color": "#2ca02c", "width": 2},
        customdata=[[c, r] for c, r in zip(s.call_cost, s.cache_read, strict=True)],
        hovertemplate=(f"{money}%{{y:{shown}}} so far; this call {money}%{{customdata[0]:{shown}}}, "
                       "cache reads %{customdata[1]:,} tokens<extra></extra>"))
    if not s.cache_simulated:
        fig = go.Figure(cumulative)
        # Top left: a cumulative line never rises there.
        fig.add_annotation(text="cache hit per call: n/a, no provider cache was simulated (--provider-cache)",
                           xref="paper", yref="paper", x=0.01, y=1, xanchor="left", yanchor="top", showarrow=False,
                           font={"size": 13, "color": "#555"}, bgcolor="rgba(255,255,255,0.9)")
        _marks(fig, s.compactions)
        return _layout(fig, y_title=unit, calls=len(calls))
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.1, row_heights=[0.6, 0.4])
    fig.add_trace(cumulative, row=1, col=1)
    hits = [100 * (h or 0.0) for h in s.cache_hit]
    hover = "cache hit %{y:.1f} %<extra></extra>"
    # Bars for a few calls; past that they thin to hairlines, and a line reads better.
    bar = (go.Bar(x=calls, y=hits, name="cache hit", marker={"color": "#9467bd"}, hovertemplate=hover)
           if len(calls) <= FEW_CALLS else
           go.Scatter(x=calls, y=hits, mode="lines", name="cache hit", line={"color": "#9467bd", "width": 1.5},
                      hovertemplate=hover))
    fig.add_trace(bar, row=2, col=1)
    _marks(fig, s.compactions, row="all", col=1)
    _layout(fig, y_title=unit, calls=len(calls), height=HEIGHT + 80)
    fig.update_xaxes(title_text="", row=1, col=1)
    fig.update_yaxes(title_text="cache hit %", range=[0, 100], row=2, col=1)
    return fig


def policy_context_figure(series: Sequence[ReplaySeries]) -> go.Figure:
    """Each policy's context size per call on one chart, against the case's window and threshold."""
    fig = go.Figure()
    longest = max((len(s.context) for s in series), default=1)
    for i, s in enumerate(series):
        colour = POLICY_COLOURS[i % len(POLICY_COLOURS)]
        fig.add_trace(go.Scatter(x=list(s.calls), y=list(s.context), mode=_mode(longest), name=s.policy,
                                 line={"color": colour, "width": 2},
                                 hovertemplate=f"%{{y:,}} tokens<extra>{s.policy}</extra>"))
        if s.compactions:
            fig.add_trace(go.Scatter(x=list(s.compactions), y=[s.context[c - 1] for c in s.compactions],
                                     mode="markers", name=f"{s.policy}: compaction", showlegend=False,
                                     marker={"symbol": "x", "size": 8, "color": colour}, hoverinfo="skip"))
    if series:
        _level(fig, longest, series[0].window, "window", WINDOW_COLOUR, "dash")
        _level(fig, longest, series[0].threshold, "threshold", THRESHOLD_COLOUR, "dash")
    return _layout(fig, y_title="tokens", calls=longest)


def policy_cost_figure(series: Sequence[ReplaySeries]) -> go.Figure:
    """Each policy's cumulative cost (or input tokens) on one chart."""
    fig = go.Figure()
    priced = all(s.cost_priced for s in series) and bool(series)
    for i, s in enumerate(series):
        fig.add_trace(go.Scatter(x=list(s.calls), y=list(s.cumulative if priced or not s.cost_priced
                                                          else _tokens(s)),
                                 mode=_mode(len(s.calls)), name=s.policy,
                                 line={"color": POLICY_COLOURS[i % len(POLICY_COLOURS)], "width": 2},
                                 hovertemplate=("$%{y:.4f}" if priced else "%{y:,.0f}") + f"<extra>{s.policy}</extra>"))
    unit = f"USD ({series[0].price_model})" if priced else "cumulative input tokens"
    return _layout(fig, y_title=unit, calls=max((len(s.context) for s in series), default=1))


def _call_details(s: ReplaySeries) -> list[str]:
    """What each call's hover adds to its size: the event (a compaction, a cut) and the tokens per kind."""
    details = []
    for i, event in enumerate(s.events):
        kinds = " · ".join(f"{kind} {s.composition[kind][i]:,}" for kind in COMPOSITION_KINDS if s.composition[kind][i])
        details.append((f", {event}" if event else "") + (f"<br>{kinds}" if kinds else ""))
    return details


def _mode(calls: int) -> str:
    return "lines+markers" if calls <= FEW_CALLS else "lines"


def _tokens(s: ReplaySeries) -> list[float]:
    running, out = 0.0, []
    for tokens in s.context:
        running += tokens
        out.append(running)
    return out
