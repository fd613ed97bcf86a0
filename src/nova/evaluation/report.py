"""One self-contained HTML file for a replay: context size per call against the window and the compaction
threshold with compactions marked, and cumulative cost (or cumulative input tokens without a price).

The plots are SVG written here, inline: the file opens offline, loads nothing, runs no script, and
needs no plotting dependency (two line charts do not justify one in the core install).
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass

from nova.providers.pricing import model_info
from nova.replay import ReplayReport

__all__ = ["Line", "replay_report_html", "svg_chart"]

WIDTH, HEIGHT, PAD_LEFT, PAD_BOTTOM, PAD_TOP, PAD_RIGHT = 960, 300, 70, 36, 16, 150


@dataclass(frozen=True, slots=True)
class Line:
    label: str
    values: Sequence[float]
    color: str
    dashed: bool = False


def _fmt(value: float) -> str:
    if value >= 1_000_000:
        return f"{value / 1_000_000:.1f}M"
    if value >= 1_000:
        return f"{value / 1_000:.0f}k"
    if value == 0:
        return "0"
    return f"{value:.2f}" if value < 10 else f"{value:.0f}"


def svg_chart(title: str, lines: Sequence[Line], *, marks: Sequence[int] = (), unit: str = "") -> str:
    """A line chart over the calls (x: call 1..n), `marks` the calls drawn as vertical markers."""
    count = max((len(line.values) for line in lines), default=0)
    top = max((v for line in lines for v in line.values), default=1.0) or 1.0
    inner_w, inner_h = WIDTH - PAD_LEFT - PAD_RIGHT, HEIGHT - PAD_TOP - PAD_BOTTOM

    def x(i: int) -> float:
        return PAD_LEFT + (inner_w * i / (count - 1) if count > 1 else inner_w / 2)

    def y(v: float) -> float:
        return PAD_TOP + inner_h * (1 - v / (top * 1.05))

    out = [f'<svg role="img" aria-label="{html.escape(title)}" viewBox="0 0 {WIDTH} {HEIGHT}" width="100%" '
           f'preserveAspectRatio="xMidYMid meet" class="chart">',
           f'<rect x="{PAD_LEFT}" y="{PAD_TOP}" width="{inner_w}" height="{inner_h}" fill="#fafafa" stroke="#ccc"/>']
    for k in range(5):
        v = top * 1.05 * k / 4
        out.append(f'<text x="{PAD_LEFT - 6}" y="{y(v) + 4:.1f}" text-anchor="end" class="tick">{_fmt(v)}</text>')
    for i in (0, count // 2, count - 1) if count else ():
        out.append(f'<text x="{x(i):.1f}" y="{HEIGHT - 14}" text-anchor="middle" class="tick">{i + 1}</text>')
    out.append(f'<text x="{PAD_LEFT + inner_w / 2}" y="{HEIGHT - 1}" text-anchor="middle" class="tick">call</text>')
    for i in marks:
        out.append(f'<line class="compaction" x1="{x(i):.1f}" x2="{x(i):.1f}" y1="{PAD_TOP}" '
                   f'y2="{PAD_TOP + inner_h}" stroke="#d62728" stroke-opacity="0.35"/>')
    for n, line in enumerate(lines):
        points = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(line.values))
        dash = ' stroke-dasharray="6 4"' if line.dashed else ""
        out.append(f'<polyline data-series="{html.escape(line.label)}" fill="none" stroke="{line.color}" '
                   f'stroke-width="2"{dash} points="{points}"/>')
        out.append(f'<text x="{WIDTH - PAD_RIGHT + 8}" y="{PAD_TOP + 14 + 18 * n}" fill="{line.color}" '
                   f'class="legend">{html.escape(line.label)}</text>')
    if marks:
        out.append(f'<text x="{WIDTH - PAD_RIGHT + 8}" y="{PAD_TOP + 14 + 18 * len(lines)}" fill="#d62728" '
                   'class="legend">| compaction</text>')
    out.append(f'<text x="8" y="{PAD_TOP + inner_h / 2}" class="tick" transform="rotate(-90 14 '
               f'{PAD_TOP + inner_h / 2})">{html.escape(unit)}</text>')
    out.append("</svg>")
    return "\n".join(out)


def replay_report_html(report: ReplayReport, *, source: str, threshold: int) -> str:
    """The page for one replay. Cost per call is the agent's call (input side) at the report's price model;
    the summary calls' estimate is in the totals only."""
    sizes = [float(c.input_tokens) for c in report.per_call]
    marks = [i for i, c in enumerate(report.per_call) if c.event == "compaction"]
    size_chart = svg_chart("Context size per call", [
        Line("context (tokens)", sizes, "#1f77b4"),
        Line(f"window {report.window:,}", [float(report.window)] * len(sizes), "#555", dashed=True),
        Line(f"threshold {threshold:,}", [float(threshold)] * len(sizes), "#ff7f0e", dashed=True),
    ], marks=marks, unit="tokens")
    info = model_info(report.price_model) if report.price_model else None
    running = 0.0
    cumulative: list[float] = []
    for call in report.per_call:
        usage = call.cache if report.cost_model else None
        if info is not None and usage is not None:
            running += (usage.input_tokens * info.input + usage.cache_write_tokens * info.cache_write_5m
                        + usage.cache_read_tokens * info.cache_read) / 1_000_000
        else:
            running += call.input_tokens
        cumulative.append(running)
    cost_title, cost_unit = (("Cumulative cost of the agent's calls", f"USD ({report.price_model})") if info
                             else ("Cumulative input tokens (no price given)", "tokens"))
    cost_chart = svg_chart(cost_title, [Line("cumulative", cumulative, "#2ca02c")], marks=marks, unit=cost_unit)
    total = (f"${report.cost_usd:.4f} (input side, summary calls included)" if report.cost_usd is not None
             else "n/a (no --price)")
    rows = [("calls", f"{report.calls:,}"), ("input tokens", f"{report.input_tokens:,}"),
            ("peak context", f"{report.peak_context_tokens:,} tokens"), ("compactions", str(report.compactions)),
            ("requests over the window", str(report.requests_over_window)),
            ("cache hit rate", f"{report.cache_hit_rate:.1%}" if report.cost_model else "n/a (no --provider-cache)"),
            ("cost", total)]
    table = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in rows)
    title = f"nova replay: {source} — policy {report.policy}, window {report.window:,}"
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}</title>
<style>
body {{ font: 14px/1.45 system-ui, sans-serif; max-width: 1100px; margin: 24px auto; padding: 0 16px; color: #222; }}
h1 {{ font-size: 20px; }} h2 {{ font-size: 16px; margin-top: 28px; }}
table {{ border-collapse: collapse; }} th, td {{ text-align: left; padding: 2px 14px 2px 0; }}
th {{ font-weight: 600; }} .tick {{ font-size: 11px; fill: #555; }} .legend {{ font-size: 12px; }}
</style></head><body>
<h1>{html.escape(title)}</h1>
<table>{table}</table>
<h2>Context size per call, against the window and the compaction threshold</h2>
{size_chart}
<h2>{html.escape(cost_title)}</h2>
{cost_chart}
</body></html>
"""
