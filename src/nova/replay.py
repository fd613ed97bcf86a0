"""Replay a recorded session through a context policy, as if the agent had run with it.

The recorded assistant messages stand in for the model: before each of them a view is built from the
history so far under the chosen policy and measured (what that call would have sent); then the
recorded reply and its tool results enter history as they did in the original run. Policies:

- `naive`: the full history, always.
- `truncate`: drop the oldest messages until the view fits under the same threshold Nova uses.
- `observation-mask`: SWE-agent's rule, the last 5 tool outputs in full, older ones replaced by a line.
- `nova`: the `ContextController` (spill at entry, layer 1, layer 2 with the extractive summarizer).

Token figures come from the token counter (the recorded usage belongs to the original, unpoliced run).
Every view is checked for the invariants of `nova.context.invariants`.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from nova.agent.context_controller import ContextController
from nova.agent.summarize import Summarizer
from nova.context.invariants import check_thinking_integrity, check_tool_pairing
from nova.messages import Message, ToolResultPart, ToolUsePart, to_dict
from nova.providers.base import ToolSpec
from nova.settings import CompactionConfig, SpillConfig
from nova.tokens import TokenCounter, count_message, count_system, count_tools
from nova.tokens.counters import CL100K_PROFILE, HeuristicCounter

__all__ = ["POLICIES", "ReplayCall", "ReplayReport", "replay_messages", "view_document", "view_text"]

Policy = Literal["naive", "truncate", "observation-mask", "nova"]
POLICIES: tuple[Policy, ...] = ("naive", "truncate", "observation-mask", "nova")
# SWE-agent's default `last_n_observations`.
OBSERVATION_WINDOW = 5


@dataclass(frozen=True, slots=True)
class ReplayCall:
    input_tokens: int
    event: str


@dataclass(kw_only=True)
class ReplayReport:
    policy: str
    window: int
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    peak_context_tokens: int = 0
    compactions: int = 0
    snips: int = 0
    spills: int = 0
    breaker_trips: int = 0
    invariant_violations: int = 0
    per_call: list[ReplayCall] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    final_view: list[Message] = field(default_factory=list)
    system: str = ""
    tools: Sequence[ToolSpec] = ()

    @property
    def mean_context_tokens(self) -> float:
        return self.input_tokens / self.calls if self.calls else 0.0

    def to_json(self) -> dict[str, Any]:
        """The `nova replay --json` object; other tools read these exact keys."""
        return {
            "policy": self.policy,
            "window": self.window,
            "calls": self.calls,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "peak_context_tokens": self.peak_context_tokens,
            "compactions": self.compactions,
            "snips": self.snips,
            "spills": self.spills,
            "breaker_trips": self.breaker_trips,
            "invariant_violations": self.invariant_violations,
            "per_call": [{"input_tokens": c.input_tokens, "event": c.event} for c in self.per_call],
        }


def view_document(report: ReplayReport) -> dict[str, Any]:
    """The final model view, provider-neutral, for `--dump-view`."""
    return {
        "system": report.system,
        "tools": [{"name": t.name, "description": t.description, "input_schema": dict(t.input_schema)}
                  for t in report.tools],
        "messages": [to_dict(m) for m in report.final_view],
    }


def view_text(view: Sequence[Message]) -> str:
    """Everything a model reads in `view` as plain text (texts, summaries, tool inputs and outputs), for
    checks of the kind "is this still visible"."""
    chunks: list[str] = []
    for m in view:
        for p in m.parts:
            if isinstance(p, ToolUsePart):
                chunks.extend(str(v) for v in p.input.values())
            elif isinstance(p, ToolResultPart):
                chunks.append(p.content)
            else:
                chunks.append(getattr(p, "text", "") or getattr(p, "thinking", ""))
    return "\n".join(chunks)


class _Sizer:
    def __init__(self, counter: TokenCounter, system: str, tools: Sequence[ToolSpec]) -> None:
        self.counter = counter
        self.fixed = count_system(system, counter) + count_tools(tools, counter)
        # Keyed by object identity; the message is kept in the value so its id cannot be reused.
        self._cache: dict[int, tuple[Message, int]] = {}

    def message(self, m: Message) -> int:
        hit = self._cache.get(id(m))
        if hit is None:
            hit = self._cache[id(m)] = (m, count_message(m, self.counter))
        return hit[1]

    def view(self, view: Sequence[Message]) -> int:
        return self.fixed + sum(self.message(m) for m in view)


def _truncate(history: Sequence[Message], sizer: _Sizer, limit: int) -> list[Message]:
    total = sizer.view(history)
    start = 0
    while start < len(history) - 1 and total > limit:
        total -= sizer.message(history[start])
        start += 1
    # Never start on tool results whose call was dropped.
    while start < len(history) - 1 and history[start].has("tool_result"):
        start += 1
    return list(history[start:])


def _mask(history: Sequence[Message]) -> list[Message]:
    keep: set[str] = set()
    for m in reversed(history):
        for r in reversed(m.tool_results()):
            if len(keep) < OBSERVATION_WINDOW:
                keep.add(r.tool_use_id)
    out: list[Message] = []
    for m in history:
        results = m.tool_results()
        if not results or all(r.tool_use_id in keep for r in results):
            out.append(m)
            continue
        parts = [
            ToolResultPart(p.tool_use_id, f"Old environment output: ({p.content.count(chr(10)) + 1} lines omitted)",
                           p.is_error)
            if isinstance(p, ToolResultPart) and p.tool_use_id not in keep else p
            for p in m.parts
        ]
        out.append(m.with_parts(parts))
    return out


def replay_messages(
    messages: Sequence[Message],
    *,
    system: str = "",
    tools: Sequence[ToolSpec] = (),
    window: int,
    policy: Policy = "nova",
    config: CompactionConfig | None = None,
    spill: SpillConfig | None = None,
    counter: TokenCounter | None = None,
    summarizer: Summarizer | None = None,
    session_dir: Path | None = None,
) -> ReplayReport:
    """Replay `messages` (a recorded conversation) under `policy` with a `window`-token model."""
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; choose one of {', '.join(POLICIES)}")
    config = config or CompactionConfig()
    counter = counter or HeuristicCounter(CL100K_PROFILE)
    with tempfile.TemporaryDirectory(prefix="nova-replay-") as tmp:
        directory = session_dir or Path(tmp) / "session"
        controller = ContextController(config=config, spill=spill, window=window, counter=counter,
                                       summarizer=summarizer, session_dir=directory, system=system, tools=tools)
        report = _run(messages, system=system, tools=tools, window=window, policy=policy,
                      controller=controller)
    return report


def _run(
    messages: Sequence[Message], *, system: str, tools: Sequence[ToolSpec], window: int, policy: Policy,
    controller: ContextController,
) -> ReplayReport:
    from nova.agent.loop import ViewRequest

    sizer = _Sizer(controller.counter, system, tools)
    report = ReplayReport(policy=policy, window=window, system=system, tools=tools)
    raw = {m.id: m for m in messages}
    history: list[Message] = []
    calls_by_id: dict[str, ToolUsePart] = {}

    def build_view() -> tuple[list[Message], str]:
        nonlocal history
        if policy == "naive":
            return list(history), ""
        if policy == "truncate":
            view = _truncate(history, sizer, controller.threshold)
            return view, "truncate" if len(view) < len(history) else ""
        if policy == "observation-mask":
            return _mask(history), ""
        history = controller.prepare_view(ViewRequest(history=history, system=system))
        return list(history), controller.stats.last_event

    for message in messages:
        if message.role == "assistant":
            view, event = build_view()
            used = sizer.view(view)
            report.calls += 1
            report.input_tokens += used
            report.peak_context_tokens = max(report.peak_context_tokens, used)
            report.per_call.append(ReplayCall(used, event))
            problems = check_tool_pairing(view) + check_thinking_integrity(view, raw)
            report.invariant_violations += len(problems)
            report.violations.extend(f"call {report.calls}: {p}" for p in problems[:5])
            usage = message.metadata.get("usage")
            output = usage.get("output_tokens") if isinstance(usage, dict) else None
            report.output_tokens += int(output) if isinstance(output, int) else sizer.message(message)
            for u in message.tool_uses():
                calls_by_id[u.id] = u
            history.append(message)
        elif message.has("tool_result") and policy == "nova":
            parts = [controller.process_result(calls_by_id[p.tool_use_id], p)
                     if isinstance(p, ToolResultPart) and p.tool_use_id in calls_by_id else p
                     for p in message.parts]
            history.append(message.with_parts(parts) if parts != list(message.parts) else message)
        else:
            history.append(message)
    final, _ = build_view() if history else ([], "")
    report.final_view = final
    if policy == "nova":
        report.compactions = controller.stats.compactions
        report.snips = controller.stats.snips
        report.spills = controller.stats.spills
        report.breaker_trips = controller.stats.breaker_trips
    return report
