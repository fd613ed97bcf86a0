"""Run evaluation cases: replay each case's session under each of its policies and measure the view, the
memories the recorded agent used (`nova.evaluation.usefulness`) and the latencies (`nova.evaluation.latency`).
A case's poisoning attempts and memory scenario run apart (`nova.evaluation.scenarios`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from nova.evaluation.cases import EvalCase, derived_items
from nova.evaluation.counterfactual import CounterfactualResult, ViewRun, run_counterfactuals
from nova.evaluation.latency import CallTimer, TimedProvider, build_latency, model_latency, recorded_latency
from nova.evaluation.metrics import Metric, Ratio, metrics_of
from nova.evaluation.replay import Policy, ReplayReport, replay_session, view_text
from nova.evaluation.usefulness import RecalledUse, recorded_uses, usefulness
from nova.providers.base import Provider
from nova.sessions.readers.base import ImportedSession
from nova.settings import CompactionConfig, SpillConfig
from nova.tokens import TokenCounter

__all__ = ["CaseResult", "calls_of", "run_case"]


@dataclass(frozen=True, kw_only=True)
class CaseResult:
    case: str
    policy: str
    window: int
    """The window the replay ran at: the case's, or the smallest larger one its policy fits in when a
    stand-in for a fixed prompt the recording lacks leaves no room (`window_raised_from`)."""
    evidence: tuple[str, ...]
    constraints: tuple[str, ...]
    metrics: dict[str, Ratio | Metric]
    report: ReplayReport
    baseline_run: ViewRun | None = None
    """The run of the final view the counterfactuals are compared with (None without counterfactuals)."""
    counterfactuals: tuple[CounterfactualResult, ...] = ()
    memory_use: tuple[RecalledUse, ...] = ()
    """Each memory recalled in the recording and whether the agent used it (`memory_usefulness`)."""

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "case": self.case, "policy": self.policy, "window": self.window,
            **({"window_raised_from": self.report.window_raised_from} if self.report.window_raised_from else {}),
            "calls": self.report.calls,
            "compactions": self.report.compactions, "provider_cache": self.report.provider_cache or None,
            "price_model": self.report.price_model or None,
            "metrics": {name: m.to_json() for name, m in self.metrics.items()},
            "missing_evidence": [e for e in self.evidence if not _readable(e, self.report)],
            "missing_constraints": [c for c in self.constraints if not _readable(c, self.report)],
        }
        if self.memory_use:
            data["memory_use"] = [u.to_json() for u in self.memory_use]
        # The replay's numbers the report plots: each call's size and composition, each compaction's lists.
        replayed = self.report.to_json()
        data["per_call"], data["view_changes"] = replayed["per_call"], replayed["view_changes"]
        data["receipts"] = replayed.get("receipts", [])
        if self.baseline_run is not None:
            data["counterfactuals"] = {"baseline": self.baseline_run.to_json(),
                                       "runs": [c.to_json() for c in self.counterfactuals]}
        return data


def _readable(item: str, report: ReplayReport) -> bool:
    return item in view_text(report.final_view)


def run_case(case: EvalCase, session: ImportedSession, *, counter: TokenCounter,
             config: CompactionConfig | None = None, spill: SpillConfig | None = None,
             on_call: Callable[[], None] | None = None, provider: Provider | None = None,
             model: str = "") -> list[CaseResult]:
    """One result per policy, for the case's session as imported (`nova.sessions.importers`); `on_call`
    is called once per simulated model call and counterfactual run (`calls_of` counts them ahead, for a
    progress bar). The counterfactual runs are sent to `provider` when one is given."""
    evidence, constraints = list(case.evidence), list(case.constraints)
    if case.derive:
        more_evidence, more_constraints = derived_items(session.messages)
        evidence += [e for e in more_evidence if e not in evidence]
        constraints += [c for c in more_constraints if c not in constraints]
    recorded = {m.id for m in session.messages}
    uses = recorded_uses(session.messages)
    timed = TimedProvider(provider) if provider is not None else None
    results = []
    # What the recording did comes first, every other policy beside it: "Nova against what you ran".
    for policy in sorted(case.policies, key=lambda p: p != "recorded"):
        chosen: Policy = policy  # type: ignore[assignment]  # checked when the case was loaded
        timer = CallTimer(on_call)
        report = replay_session(session, window=case.window, policy=chosen, config=config, spill=spill,
                                counter=counter,
                                provider_cache=case.provider_cache,  # type: ignore[arg-type]  # checked on load
                                price_model=case.price, on_call=timer)
        metrics = metrics_of(report, evidence=evidence, constraints=constraints, recorded=recorded, counter=counter)
        metrics["memory_usefulness"] = usefulness(uses)
        metrics.update(build_latency(timer.durations_ms))
        metrics.update(recorded_latency(session.messages))
        baseline: ViewRun | None = None
        changed: list[CounterfactualResult] = []
        if case.counterfactuals:
            baseline, changed = run_counterfactuals(
                case.counterfactuals, system=report.system, tools=report.tools, view=report.final_view,
                counter=counter, evidence=evidence, constraints=constraints, recorded=recorded,
                provider=timed, model=model, on_call=on_call)
        if timed is not None:  # the counterfactual runs this policy sent to the model
            metrics.update(model_latency(timed.seconds))
            timed.seconds.clear()
        results.append(CaseResult(case=case.name, policy=policy, window=report.window, evidence=tuple(evidence),
                                  constraints=tuple(constraints), metrics=metrics, report=report,
                                  baseline_run=baseline, counterfactuals=tuple(changed), memory_use=tuple(uses)))
    return results


def calls_of(case: EvalCase, session: ImportedSession) -> int:
    """How many model calls `run_case` makes for this case: one per recorded response, per policy, and per
    policy the baseline and each counterfactual run."""
    runs = 1 + len(case.counterfactuals) if case.counterfactuals else 0
    return (sum(1 for m in session.messages if m.role == "assistant") + runs) * len(case.policies)
