"""Counterfactual runs (EVAL-2): change the view a replay ended with in one declared way, run it again, and
report which view the run saw and what changed against the baseline.

A case lists them under `counterfactuals`:

    counterfactuals:
      - remove: message:m00003          # a segment name (or a message id), or a class: every segment of it
      - swap: [message:m00003, message:m00007]
      - inject: "The tests live in tests/legacy/, not tests/."
        at: 2                           # the position among the message segments (0: first), before:NAME,
                                        # after:NAME or end (the default: the last thing the model reads)

The segments are those of the view one request sends: `system`, `tools` (when there are tools), then one
per message, named `message:<id>` (the name the compiler's manifest gives a message). An assistant message
that calls tools and the results that answer it are one `step` segment, so no change ever splits a call
from its result. Classes: system, tools, request (the first user message), user, step, assistant,
observation (results without their call), summary, injected.

Each run is measured like the baseline (the EVAL-1 view metrics) and, when a provider is given, sent to
it: offline a scripted or function provider (`nova.testing`), with a configured provider the real model.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from nova.errors import NovaError
from nova.evaluation.case_keys import reject_unknown_keys
from nova.evaluation.metrics import (
    Ratio,
    constraint_retention,
    context_precision,
    evidence_recall,
    provenance_coverage,
)
from nova.messages import Message, SummaryPart, to_dict
from nova.model import ModelRequest, ToolSpec
from nova.providers.base import Provider, collect
from nova.tokens import TokenCounter, count_message, count_system, count_tools

__all__ = ["Counterfactual", "CounterfactualError", "CounterfactualResult", "NotInView", "ViewRun", "ViewSegment",
           "apply_counterfactual", "parse_counterfactual", "run_counterfactuals", "segments_of"]

Kind = Literal["remove", "swap", "inject"]
CLASSES = ("system", "tools", "request", "user", "step", "assistant", "observation", "summary", "injected")
_VIEW_METRICS = ("evidence_recall", "constraint_retention", "context_precision", "noise_rate",
                 "provenance_coverage")


class CounterfactualError(NovaError):
    """A counterfactual that names no segment of the view, or is written wrongly."""


@dataclass(frozen=True, kw_only=True)
class Counterfactual:
    kind: Kind
    targets: tuple[str, ...] = ()
    """remove: one name or class; swap: two names."""
    text: str = ""
    """inject: the text a user message at `at` says."""
    at: str | int | None = None
    name: str = ""

    @property
    def label(self) -> str:
        if self.name:
            return self.name
        if self.kind == "inject":
            return f"inject at {'end' if self.at is None else self.at}"
        return f"{self.kind} {' and '.join(self.targets)}"


def parse_counterfactual(data: object, where: str) -> Counterfactual:
    """One entry of a case's `counterfactuals` list (see the module docstring)."""
    if not isinstance(data, dict):
        raise CounterfactualError(f"{where}: a counterfactual is a mapping with remove, swap or inject")
    kinds = [k for k in ("remove", "swap", "inject") if k in data]
    if len(kinds) != 1:
        raise CounterfactualError(f"{where}: a counterfactual has exactly one of remove, swap, inject")
    reject_unknown_keys(data, ("remove", "swap", "inject", "at", "name"), where, CounterfactualError)
    kind: Kind = kinds[0]  # type: ignore[assignment]  # one of the three, checked above
    value, name, at = data[kind], data.get("name", ""), data.get("at")
    if not isinstance(name, str):
        raise CounterfactualError(f"{where}: name must be text")
    if at is not None and (kind != "inject" or isinstance(at, bool) or not isinstance(at, int | str)):
        raise CounterfactualError(f"{where}: `at` (a position, before:NAME or after:NAME) goes with inject only")
    if kind == "remove" and isinstance(value, str) and value:
        return Counterfactual(kind=kind, targets=(value,), name=name)
    if kind == "swap" and isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) and v for v in value):
        if value[0] == value[1]:
            raise CounterfactualError(f"{where}: swap needs two different segments")
        return Counterfactual(kind=kind, targets=(value[0], value[1]), name=name)
    if kind == "inject" and isinstance(value, str) and value:
        return Counterfactual(kind=kind, text=value, at=at, name=name)
    shapes = {"remove": "a segment name or class", "swap": "a list of two segment names", "inject": "a text"}
    raise CounterfactualError(f"{where}: {kind} takes {shapes[kind]}")


@dataclass(frozen=True, kw_only=True)
class ViewSegment:
    name: str
    cls: str
    messages: tuple[Message, ...] = ()
    """Empty for the system and tools segments."""


@dataclass(frozen=True, kw_only=True)
class ViewParts:
    """A view as its segments: what a counterfactual edits."""

    system: str
    tools: tuple[ToolSpec, ...]
    segments: tuple[ViewSegment, ...]

    @property
    def messages(self) -> list[Message]:
        return [m for s in self.segments for m in s.messages]


def segments_of(system: str, tools: Sequence[ToolSpec], messages: Sequence[Message]) -> ViewParts:
    segments: list[ViewSegment] = []
    if system:
        segments.append(ViewSegment(name="system", cls="system"))
    if tools:
        segments.append(ViewSegment(name="tools", cls="tools"))
    i, seen_request = 0, False
    while i < len(messages):
        m = messages[i]
        group = [m]
        calls = {u.id for u in m.tool_uses()} if m.role == "assistant" else set()
        while calls and i + len(group) < len(messages):
            after = messages[i + len(group)]
            answered = {r.tool_use_id for r in after.tool_results()}
            if not answered or not answered <= calls:
                break
            group.append(after)
        if any(isinstance(p, SummaryPart) for p in m.parts):
            cls = "summary"
        elif m.metadata.get("counterfactual") == "injected":
            cls = "injected"
        elif len(group) > 1:
            cls = "step"
        elif m.role == "assistant":
            cls = "assistant"
        elif m.tool_results():
            cls = "observation"
        elif not seen_request:
            cls, seen_request = "request", True
        else:
            cls = "user"
        segments.append(ViewSegment(name=f"message:{m.id}", cls=cls, messages=tuple(group)))
        i += len(group)
    return ViewParts(system=system, tools=tuple(tools), segments=tuple(segments))


class NotInView(CounterfactualError):
    """The target is real but absent from this view: a class with no segment in it, or a recorded message
    this policy compacted away. The run is the baseline's, with a note, so one policy's view does not stop
    the others'."""


def _find(parts: ViewParts, target: str, *, classes: bool, recorded: Collection[str] = ()) -> list[int]:
    name = target if ":" in target or target in ("system", "tools") else f"message:{target}"
    found = [i for i, s in enumerate(parts.segments) if s.name == name]
    if not found and classes and target in CLASSES:
        found = [i for i, s in enumerate(parts.segments) if s.cls == target]
        if not found:
            raise NotInView(f"no {target} segment in this view")
    if not found and name.removeprefix("message:") in recorded:
        raise NotInView(f"{name} is recorded but not in this view (compacted away)")
    if not found:
        names = ", ".join(s.name for s in parts.segments[:8]) + (", ..." if len(parts.segments) > 8 else "")
        raise CounterfactualError(f"no segment {target!r} in the view (segments: {names}"
                                  f"{'; classes: ' + ', '.join(CLASSES) if classes else ''})")
    return found


def _position(parts: ViewParts, at: str | int | None, recorded: Collection[str]) -> int:
    """The index in `parts.segments` an injected segment goes to; the system and tools stay in front."""
    heads = sum(1 for s in parts.segments if not s.messages)
    count = len(parts.segments)
    if at is None or at == "end":
        return count
    if isinstance(at, int):
        if not 0 <= at <= count - heads:
            raise CounterfactualError(f"inject at {at}: a position from 0 to {count - heads} (the message segments)")
        return heads + at
    where, _, target = at.partition(":")
    if where not in ("before", "after") or not target:
        raise CounterfactualError(f"inject at {at!r}: write a position, end, before:NAME or after:NAME")
    index = _find(parts, target, classes=False, recorded=recorded)[0]
    return max(heads, index + (where == "after"))


def apply_counterfactual(parts: ViewParts, change: Counterfactual, *, number: int = 1,
                         recorded: Collection[str] = ()) -> ViewParts:
    """The view with `change` made; `number` names an injected message (`message:injected-<number>`).
    Raises `NotInView` for a target absent from this view that is a class or one of the `recorded` ids."""
    segments = list(parts.segments)
    system, tools = parts.system, parts.tools
    if change.kind == "remove":
        gone = set(_find(parts, change.targets[0], classes=True, recorded=recorded))
        names = {segments[i].name for i in gone}
        system = "" if "system" in names else system
        tools = () if "tools" in names else tools
        segments = [s for i, s in enumerate(segments) if i not in gone]
    elif change.kind == "swap":
        a, b = (_find(parts, t, classes=False, recorded=recorded)[0] for t in change.targets)
        if not segments[a].messages or not segments[b].messages:
            raise CounterfactualError("swap moves message segments; the system and tools stay where the request puts them")
        segments[a], segments[b] = segments[b], segments[a]
    else:
        message = Message.user(change.text, id=f"injected-{number}", created_at=0.0,
                               metadata={"counterfactual": "injected"})
        segments.insert(_position(parts, change.at, recorded), ViewSegment(name=f"message:{message.id}", cls="injected",
                                                                  messages=(message,)))
    return ViewParts(system=system, tools=tools, segments=tuple(segments))


@dataclass(frozen=True, kw_only=True)
class ViewRun:
    """What one run saw: its segments with their tokens, the view's digest, its metrics and the answer."""

    segments: tuple[tuple[str, str, int], ...]
    """(name, class, tokens) in view order."""
    tokens: int
    digest: str
    """sha256 of the request's view (system, tool names, messages)."""
    metrics: Mapping[str, Ratio]
    answer: str | None = None
    """The model's reply to this view; None when no provider ran it."""

    def to_json(self) -> dict[str, Any]:
        return {"segments": [{"name": n, "class": c, "tokens": t} for n, c, t in self.segments],
                "tokens": self.tokens, "digest": self.digest,
                "metrics": {k: m.to_json() for k, m in self.metrics.items()}, "answer": self.answer}


@dataclass(frozen=True, kw_only=True)
class CounterfactualResult:
    change: Counterfactual
    run: ViewRun
    removed: tuple[str, ...]
    moved: tuple[str, ...]
    added: tuple[str, ...]
    tokens_delta: int
    metric_deltas: Mapping[str, float]
    answer_changed: bool | None = None
    note: str = ""
    """Why the view did not change: the target is not in this policy's view."""

    @property
    def segment_changes(self) -> str:
        """"removed a, b; moved c; added d" as a person reads it; empty when the view did not change."""
        return "; ".join(f"{what} {', '.join(names)}" for what, names in
                         (("removed", self.removed), ("moved", self.moved), ("added", self.added)) if names)

    @property
    def metric_changes(self) -> tuple[str, ...]:
        """Each metric that moved, in percentage points ("evidence recall -54.5 pp")."""
        return tuple(f"{name.replace('_', ' ')} {value * 100:+.1f} pp" for name, value in self.metric_deltas.items()
                     if abs(value) >= 0.0005)

    def to_json(self) -> dict[str, Any]:
        return {
            "counterfactual": self.change.label, "kind": self.change.kind, "view": self.run.to_json(),
            "changed": {"removed": list(self.removed), "moved": list(self.moved), "added": list(self.added),
                        "tokens_delta": self.tokens_delta,
                        "metric_deltas": {k: round(v, 6) for k, v in self.metric_deltas.items()},
                        "answer_changed": self.answer_changed, "note": self.note or None},
        }


def _measure(parts: ViewParts, *, counter: TokenCounter, evidence: Sequence[str], constraints: Sequence[str],
             recorded: Collection[str], answer: str | None) -> ViewRun:
    sized = []
    for s in parts.segments:
        if s.cls == "system":
            tokens = count_system(parts.system, counter)
        elif s.cls == "tools":
            tokens = count_tools(parts.tools, counter)
        else:
            tokens = sum(count_message(m, counter) for m in s.messages)
        sized.append((s.name, s.cls, tokens))
    messages = parts.messages
    precision = context_precision(messages, [*evidence, *constraints], counter)
    metrics = {"evidence_recall": evidence_recall(messages, evidence),
               "constraint_retention": constraint_retention(messages, constraints),
               "context_precision": precision,
               "noise_rate": Ratio(precision.whole - precision.part, precision.whole, "tokens"),
               "provenance_coverage": provenance_coverage(messages, recorded, counter)}
    return ViewRun(segments=tuple(sized), tokens=sum(t for _, _, t in sized), digest=_digest(parts),
                   metrics=metrics, answer=answer)


def _digest(parts: ViewParts) -> str:
    body = {"system": parts.system, "tools": [t.name for t in parts.tools],
            "messages": [to_dict(m) for m in parts.messages]}
    return hashlib.sha256(json.dumps(body, ensure_ascii=False, sort_keys=True).encode("utf-8", "surrogatepass")
                          ).hexdigest()


def _ask(provider: Provider | None, model: str, parts: ViewParts) -> str | None:
    if provider is None:
        return None
    request = ModelRequest(model=model, messages=parts.messages, system=parts.system, tools=parts.tools,
                           max_output_tokens=1024, metadata={"purpose": "counterfactual"})
    return collect(provider, request).message.text


def _diff(base: ViewRun, run: ViewRun) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    before = [n for n, _, _ in base.segments]
    after = [n for n, _, _ in run.segments]
    kept = set(before) & set(after)
    order_before = [n for n in before if n in kept]
    order_after = [n for n in after if n in kept]
    moved = tuple(n for n, m in zip(order_after, order_before, strict=True) if n != m)
    return (tuple(n for n in before if n not in kept), moved, tuple(n for n in after if n not in kept))


def run_counterfactuals(changes: Sequence[Counterfactual], *, system: str, tools: Sequence[ToolSpec],
                        view: Sequence[Message], counter: TokenCounter, evidence: Sequence[str] = (),
                        constraints: Sequence[str] = (), recorded: Collection[str] = (),
                        provider: Provider | None = None, model: str = "",
                        on_call: Callable[[], None] | None = None) -> tuple[ViewRun, list[CounterfactualResult]]:
    """The baseline run of `view` and one result per change, each made to the baseline view (not chained).
    `provider` answers every run (the baseline too); without one the runs are measured, not sent."""
    parts = segments_of(system, tools, view)

    def measured(p: ViewParts) -> ViewRun:
        answer = _ask(provider, model, p)
        if on_call is not None:
            on_call()
        return _measure(p, counter=counter, evidence=evidence, constraints=constraints, recorded=recorded,
                        answer=answer)

    base = measured(parts)
    results = []
    for number, change in enumerate(changes, start=1):
        try:
            changed, note = apply_counterfactual(parts, change, number=number, recorded=recorded), ""
        except NotInView as exc:
            changed, note = parts, str(exc)
        run = measured(changed)
        removed, moved, added = _diff(base, run)
        deltas = {k: run.metrics[k].value - base.metrics[k].value for k in _VIEW_METRICS}
        results.append(CounterfactualResult(
            change=change, run=run, removed=removed, moved=moved, added=added, tokens_delta=run.tokens - base.tokens,
            metric_deltas=deltas, answer_changed=None if provider is None else run.answer != base.answer, note=note))
    return base, results
