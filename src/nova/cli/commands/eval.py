"""`nova eval CASES`: replay recorded sessions under context policies and print the EVAL-1 metrics.

Mounted lazily by `nova.cli.main` as `nova eval`. The case file format is in `nova.evaluation.cases`; the
metrics and their units in `nova.evaluation.metrics`, memory usefulness in `nova.evaluation.usefulness`,
the latencies in `nova.evaluation.latency`, poisoning attempts and memory scenarios (no session needed)
in `nova.evaluation.scenarios`. Everything runs offline unless `--call-model`: sessions are replayed
with the extractive summarizer, as `nova replay` does, costs come from the simulated provider cache
and the model table, and memory scenarios answer with the case's scripted answers.
"""

# No `from __future__ import annotations`: typer reads the command signatures each time the command runs.
import json
import logging
import os
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from nova.cli.commands.errors import user_errors
from nova.cli.commands.global_options import global_overrides
from nova.evaluation.cases import CaseError, load_cases
from nova.evaluation.metrics import Metric, Ratio
from nova.evaluation.report_data import plain_figure
from nova.evaluation.run import CaseResult, calls_of, run_case
from nova.evaluation.scenarios import ScenarioResult, run_scenario, scenario_steps
from nova.present.run_progress import RunProgress
from nova.present.terminal import terminal_console
from nova.present.text import one_line
from nova.providers.pricing import model_info
from nova.settings import load_settings
from nova.tokens import counter_for_model

__all__ = ["eval_command"]

console = terminal_console(highlight=False)
err_console = terminal_console(stderr=True, highlight=False)

# The order and the labels of the text report.
_LABELS = {
    "evidence_recall": "recall of required evidence",
    "context_precision": "context precision",
    "noise_rate": "noise rate",
    "constraint_retention": "constraint retention",
    "provenance_coverage": "provenance coverage",
    "cache_hit_rate": "cache hit rate",
    "cost_per_session": "cost per session",
    "cost_per_call": "cost per call",
    "memory_usefulness": "memory usefulness",
    "memories_recalled_per_turn": "memories recalled per turn",
    "poisoning_rate": "poisoning rate",
    "poisoning_rate_naive": "  against a naive memory",
    "latency_build_ms_p50": "context build p50",
    "latency_build_ms_p95": "context build p95",
    "latency_build_ms_per_session": "context build, session",
    "latency_recorded_s_p50": "recorded response p50",
    "latency_recorded_s_p95": "recorded response p95",
    "latency_recorded_s_per_session": "recorded responses, session",
    "latency_recall_ms_p50": "memory recall p50",
    "latency_recall_ms_p95": "memory recall p95",
    "latency_model_s_p50": "model response p50",
    "latency_model_s_p95": "model response p95",
    "latency_model_s_per_session": "model responses, session",
}


def eval_command(
    cases: Annotated[Path, typer.Argument(help="A case file (JSON or YAML): a recorded session, the policies, "
                                          "the required evidence; memory poisoning attempts, a scripted "
                                          "memory scenario.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object with every case, policy and "
                                          "metric.")] = False,
    call_model: Annotated[bool, typer.Option("--call-model", help="Send each case's counterfactual runs and memory "
                                             "scenario turns to the configured provider and model (real "
                                             "requests); without it they are measured offline.")] = False,
    report_html: Annotated[Path | None, typer.Option("--report", help="Also write one self-contained HTML file "
                           "with the plots: each case's policies side by side, the metrics, and each replay's "
                           "context, composition, cost and compactions. Needs the `report` extra (plotly).")
                           ] = None,
) -> None:
    """Measure context policies on recorded sessions (evidence, precision, cache, cost, latency) and memory on
    scripted cases (usefulness, poisoning)."""
    if report_html is not None:
        from nova.cli.commands.report_extra import require_report_extra

        require_report_extra(report_html)
    with user_errors():
        settings = load_settings(env=dict(os.environ), overrides=global_overrides())
    try:
        loaded = load_cases(cases)
    except CaseError as exc:
        err_console.print(f"nova: error: {exc}", markup=False, soft_wrap=True)
        raise typer.Exit(2) from None
    for case in loaded:
        if case.price is not None and model_info(case.price) is None:
            err_console.print(f"nova: error: case {case.name}: no price for model {case.price!r} in the model "
                              "table", markup=False, soft_wrap=True)
            raise typer.Exit(2)
    for name in ("nova.agent", "nova.context"):
        logging.getLogger(name).setLevel(logging.ERROR)
    from nova.sessions.importers import read_session_file

    sessions = []
    for case in loaded:
        # A file that cannot be read exits 1, as `nova replay` does for the same file.
        with user_errors(exit_code=1, os_errors=True):
            sessions.append(read_session_file(case.session) if case.session is not None else None)
        unanswered = [n for n, turn in enumerate(case.memory.turns if case.memory else (), 1) if turn.answer is None]
        if unanswered and not call_model:
            err_console.print(f"nova: error: {case.name!r}: memory turn {unanswered[0]} has no `answer`: write "
                              "the scripted agent's answer, or run with --call-model", markup=False, soft_wrap=True)
            raise typer.Exit(2)
    provider = None
    if call_model and any(case.counterfactuals or case.memory for case in loaded):
        from nova.agent.provider_factory import make_provider

        with user_errors():
            provider = make_provider(settings, dict(os.environ))
    results: list[CaseResult] = []
    scenarios: list[ScenarioResult] = []
    in_file_order: list[CaseResult | ScenarioResult] = []  # what the table prints, case by case
    total = sum((calls_of(case, session) if session is not None else 0) + scenario_steps(case.poisoning, case.memory)
                for case, session in zip(loaded, sessions, strict=True))
    with RunProgress(total, label="evaluating calls", stream=sys.stderr) as bar:
        for case, session in zip(loaded, sessions, strict=True):
            with user_errors(exit_code=1):
                if session is not None:
                    counter = counter_for_model(str(session.meta.get("model") or settings.model))
                    measured = run_case(case, session, counter=counter, config=settings.compaction,
                                        spill=settings.spill, on_call=bar.advance, provider=provider,
                                        model=settings.model)
                    results += measured
                    in_file_order += measured
                if case.poisoning is not None or case.memory is not None:
                    scenarios.append(run_scenario(case.name, poisoning=case.poisoning, memory=case.memory,
                                                  provider=provider, model=settings.model,
                                                  on_step=bar.advance))
                    in_file_order.append(scenarios[-1])
    if report_html is not None:
        from nova.cli.commands.report_extra import write_report
        from nova.evaluation.report import eval_report_html

        write_report(report_html, eval_report_html(results, source=cases.name, scenarios=scenarios))
    if as_json:
        print(json.dumps({"results": [r.to_json() for r in results],
                          **({"scenarios": [s.to_json() for s in scenarios]} if scenarios else {})}))
        return
    for result in in_file_order:
        if isinstance(result, ScenarioResult):
            _print_scenario(result)
            continue
        report = result.report
        raised = report.window_raised_from
        console.print(f"[bold]{escape(result.case)}[/] policy={escape(result.policy)} window={result.window:,}"
                      + (f" (raised from {raised:,}: with the stand-in for the fixed prompt the recording lacks, "
                         f"policy {escape(result.policy)} cannot fit {raised:,}; this is the smallest window "
                         "that can work)" if raised else ""), soft_wrap=True)
        console.print(f"  {report.calls} calls, {report.compactions} compactions; measured: the final view, "
                      f"{len(report.final_view)} messages", markup=False)
        _print_metrics(result.metrics)
        missing = result.to_json()
        for key, what in (("missing_evidence", "evidence"), ("missing_constraints", "constraint")):
            for item in missing[key][:5]:
                console.print(f"  missing {what}: {one_line(item, 100)}", markup=False)
        for use in result.memory_use[:10]:
            console.print(f"  recall {use.recall}: {use.memory} " + (f"used ({one_line(use.used, 100)})" if use.used
                          else "unused" if use.terms else "unused (no distinctive term)"), markup=False)
        if len(result.memory_use) > 10:
            console.print(f"  … {len(result.memory_use) - 10} more recalled memories (--json lists them)",
                          markup=False)
        if result.baseline_run is not None:
            _print_counterfactuals(result)


def _print_metrics(metrics: dict[str, Ratio | Metric]) -> None:
    for name, label in _LABELS.items():
        if name in metrics:
            console.print(f"  {label:<29}{_shown(metrics[name])}", markup=False, soft_wrap=True)


def _print_scenario(result: ScenarioResult) -> None:
    what = [w for w, held in (("poisoning attempts", result.poisoning), ("memory scenario", result.turns)) if held]
    console.print(f"[bold]{escape(result.case)}[/] {' and '.join(what)}, no recorded session")
    _print_metrics(result.metrics)
    for outcome in result.poisoning:
        if outcome.poisoned:
            console.print(f"  POISONED {outcome.attempt.channel} {outcome.attempt.name}: {outcome.how}", markup=False)
    for turn in result.turns:
        uses = ", ".join(f"{u.memory} " + (f"used ({one_line(u.used, 100)})" if u.used else "unused") for u in turn.uses)
        console.print(f"  turn {turn.turn} ({turn.answered_by} answer): recalled {len(turn.recalled)} of "
                      f"{turn.scanned} recallable{': ' + uses if uses else ''}", markup=False, soft_wrap=True)


def _print_counterfactuals(result: CaseResult) -> None:
    base = result.baseline_run
    assert base is not None
    console.print(f"  counterfactuals against the final view ({len(base.segments)} segments, {base.tokens:,} tokens, "
                  f"view {base.digest[:12]}):", markup=False, soft_wrap=True)
    for c in result.counterfactuals:
        deltas = c.metric_changes
        answer = "" if c.answer_changed is None else ("; answer changed" if c.answer_changed else "; same answer")
        if c.note:
            console.print(f"    {c.change.label}: {c.note}; the run saw the baseline view{answer}", markup=False,
                          soft_wrap=True)
            continue
        console.print(f"    {c.change.label}: view {c.run.digest[:12]}, {c.segment_changes or 'no change'}, "
                      f"tokens {c.tokens_delta:+,}{'; ' + ', '.join(deltas) if deltas else ''}{answer}",
                      markup=False, soft_wrap=True)


def _shown(metric: Ratio | Metric) -> str:
    if isinstance(metric, Ratio):
        if not metric.applicable:
            return f"    n/a  ({metric.na})"
        return f"{metric.value:7.1%}  ({metric.part:,} of {metric.whole:,} {metric.unit})"
    if metric.value is None:
        return f"    n/a  ({metric.unit}; {metric.na or 'give the case a `price`'})"
    if metric.unit.startswith("USD"):
        return f"${metric.value:.6f}  ({metric.unit})"
    return f"{plain_figure(metric.value):>7}  ({metric.unit})"
