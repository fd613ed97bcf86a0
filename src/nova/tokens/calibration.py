"""Fitting and scoring a token profile on recorded sessions that carry the provider's real usage.

Between two consecutive calls of one conversation the real input grows by exactly what was appended:
the previous reply and what came back (tool results, user messages). So each pair of calls is one
`GrowthStep`, and a profile is judged by how well it counts those appended messages against the real
difference, never by anything of the call it would predict.

Claude Code sessions (JSONL) are read here because they are the recorded Claude sessions with usage we
have. Their records are not a clean list: one record per content block of a response (all with the same
`message.id` and the same usage), records out of file order (they link by `parentUuid`), sub-agent
branches (`isSidechain`) and compaction boundaries (a new chain whose `logicalParentUuid` points back).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

from nova.messages import ImagePart, Message, Part, TextPart, ToolResultPart, ToolUsePart
from nova.tokens.counters import CL100K_PROFILE, HeuristicCounter, TokenCounter, claude_profile
from nova.tokens.sizing import IMAGE_TOKENS, count_message, overheads_of

__all__ = [
    "GrowthScore",
    "GrowthStep",
    "claude_code_steps",
    "claude_counter",
    "fit_claude",
    "score_growth",
]


@dataclass(frozen=True, slots=True)
class GrowthStep:
    """Call k of a conversation against call k-1: `added` is call k-1's reply and what came back."""

    source: str
    model: str
    previous_real: int
    real: int
    added: tuple[Message, ...]

    @property
    def growth(self) -> int:
        return self.real - self.previous_real


@dataclass(frozen=True, slots=True)
class GrowthScore:
    """`ratios`: real growth ÷ estimated growth per step. `anchored_errors_pct`: |real(k-1) + estimated
    growth - real(k)| in percent of real(k), what the ledger's anchored figure would have been off by."""

    ratios: tuple[float, ...]
    anchored_errors_pct: tuple[float, ...]


def _real_input(usage: Mapping[str, Any]) -> int:
    return sum(int(usage.get(key) or 0) for key in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"))


def _result_parts(block: Mapping[str, Any]) -> list[Part]:
    content = block.get("content")
    texts: list[str] = []
    images: list[Part] = []
    if isinstance(content, str):
        texts.append(content)
    for item in content if isinstance(content, list) else ():
        if item.get("type") == "text":
            texts.append(str(item.get("text", "")))
        elif item.get("type") == "image":
            source = item.get("source") or {}
            images.append(ImagePart(media_type=str(source.get("media_type", "")), data=str(source.get("data", ""))))
    result = ToolResultPart(str(block.get("tool_use_id", "")), "\n".join(texts), is_error=bool(block.get("is_error")))
    return [result, *images]


def _parts(content: Any) -> list[Part]:
    if isinstance(content, str):
        return [TextPart(content)] if content else []
    parts: list[Part] = []
    for block in content if isinstance(content, list) else ():
        kind = block.get("type")
        if kind == "text" and block.get("text"):
            parts.append(TextPart(str(block["text"])))
        elif kind == "tool_use":
            parts.append(ToolUsePart(str(block.get("id", "")), str(block.get("name", "")), block.get("input") or {}))
        elif kind == "tool_result":
            parts.extend(_result_parts(block))
        elif kind == "image":
            parts.append(ImagePart(media_type=str((block.get("source") or {}).get("media_type", ""))))
        # Thinking is left out: the recorded steps grow as if an earlier reply's thinking were not input
        # (on the two steps with thinking, counting it would put the estimate at 1.4x and 2.3x the real
        # growth instead of 1.1x and 1.3x), as Anthropic documents for earlier turns' thinking.
    return parts


def _records(path: Path) -> dict[str, dict[str, Any]]:
    """Conversation records by uuid; a record written twice is kept once."""
    records: dict[str, dict[str, Any]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("uuid") and record.get("type") in ("user", "assistant", "system"):
            records.setdefault(str(record["uuid"]), record)
    return records


_BOUNDARY = "boundary"


def _chains(records: Mapping[str, dict[str, Any]]) -> Iterator[list[dict[str, Any] | str]]:
    """Every root-to-leaf path, oldest first; a compaction boundary becomes the marker `_BOUNDARY`."""
    referenced = {r.get("parentUuid") for r in records.values()} | {r.get("logicalParentUuid") for r in records.values()}
    for uuid, leaf in records.items():
        if uuid in referenced:
            continue
        path: list[dict[str, Any] | str] = []
        seen: set[str] = set()
        record: dict[str, Any] | None = leaf
        while record is not None and str(record["uuid"]) not in seen:
            seen.add(str(record["uuid"]))
            path.append(record)
            parent = record.get("parentUuid")
            if parent is None and record.get("logicalParentUuid"):
                path.append(_BOUNDARY)
                parent = record["logicalParentUuid"]
            record = records.get(parent) if parent else None
        path.reverse()
        yield path


@dataclass
class _Call:
    id: str
    model: str
    real: int
    reply: list[Part]
    after: list[list[Part]]  # user records that came back after this call, one list per record


def _calls(path: Sequence[dict[str, Any] | str]) -> Iterator[list[_Call]]:
    """The calls of one path, grouped into runs that no compaction boundary separates."""
    run: list[_Call] = []
    by_id: dict[str, _Call] = {}
    for record in path:
        if record == _BOUNDARY or (isinstance(record, dict) and record.get("subtype") == "compact_boundary"):
            if run:
                yield run
            run, by_id = [], {}
            continue
        assert isinstance(record, dict)
        message = record.get("message") or {}
        if record["type"] == "assistant" and isinstance(message, dict) and message.get("usage"):
            call_id = str(message.get("id") or record["uuid"])
            call = by_id.get(call_id)
            if call is None:  # the first record of a response; the others add their content block
                call = by_id[call_id] = _Call(call_id, str(message.get("model", "")), 0, [], [])
                run.append(call)
            call.real = max(call.real, _real_input(message["usage"]))
            call.reply.extend(_parts(message.get("content")))
        elif record["type"] == "user" and run and isinstance(message, dict):
            parts = _parts(message.get("content"))
            if parts:
                run[-1].after.append(parts)
    if run:
        yield run


def _user_message(records: Iterable[list[Part]]) -> Message | None:
    # Consecutive user records (the results of parallel tool calls) reach the API as one user message.
    parts = [part for record in records for part in record]
    return Message(role="user", parts=tuple(parts)) if parts else None


def claude_code_steps(path: Path) -> list[GrowthStep]:
    """The growth steps of one Claude Code session file, main conversation and sub-agents alike."""
    steps: dict[tuple[str, str], GrowthStep] = {}
    for chain in _chains(_records(path)):
        for run in _calls(chain):
            for previous, call in pairwise(run):
                if (previous.id, call.id) in steps or not previous.real or not call.real:
                    continue  # a prefix shared by two branches is one step, not two
                added = [Message(role="assistant", parts=tuple(previous.reply))] if previous.reply else []
                back = _user_message(previous.after)
                if back is not None:
                    added.append(back)
                steps[(previous.id, call.id)] = GrowthStep(path.name, call.model, previous.real, call.real, tuple(added))
    return list(steps.values())


def score_growth(steps: Iterable[GrowthStep], counter: TokenCounter) -> GrowthScore:
    ratios: list[float] = []
    errors: list[float] = []
    for step in steps:
        estimated = sum(count_message(m, counter) for m in step.added)
        if step.growth > 0 and estimated > 0:
            ratios.append(step.growth / estimated)
        errors.append(abs(step.previous_real + estimated - step.real) * 100.0 / step.real)
    return GrowthScore(tuple(ratios), tuple(errors))


@dataclass(frozen=True, slots=True)
class _Features:
    growth: int
    content: int  # cl100k-heuristic tokens of the text, tool names and arguments, tool results
    fixed: int  # per-message overheads and images, which the fit does not change
    tool_parts: int  # tool calls and tool results


def _features(step: GrowthStep) -> _Features:
    base = HeuristicCounter(CL100K_PROFILE)
    overheads = overheads_of(base)
    content = fixed = tool_parts = 0
    for message in step.added:
        fixed += overheads.message
        for part in message.parts:
            if isinstance(part, ToolUsePart):
                tool_parts += 1
                arguments = json.dumps(dict(part.input), ensure_ascii=False, separators=(",", ":"), default=str)
                content += base.count(part.name) + base.count(arguments)
            elif isinstance(part, ToolResultPart):
                tool_parts += 1
                content += base.count(part.content)
            elif isinstance(part, ImagePart):
                fixed += IMAGE_TOKENS
            elif isinstance(part, TextPart):
                content += base.count(part.text)
    return _Features(step.growth, content, fixed, tool_parts)


def fit_claude(steps: Iterable[GrowthStep], *, tool_overheads: Iterable[int] = range(0, 401, 2)) -> tuple[float, int]:
    """`(scale, tool_overhead)` for `claude_profile`, minimizing the sum of |log(real ÷ estimated)| growth
    over the steps (a robust fit: one odd step moves it little). Steps with an image are left out: an
    image's cost is a constant of its own, not something the two numbers can absorb. `tool_overheads=(0,)`
    fits the scale alone."""
    overheads = tuple(tool_overheads)
    rows = [_features(s) for s in steps if s.growth > 0 and not any(isinstance(p, ImagePart) for m in s.added for p in m.parts)]
    if not rows:
        raise ValueError("no growth steps to fit on")
    best: tuple[float, float, int] | None = None
    for hundredths in range(50, 401):  # scale 0.50 .. 4.00
        scale = hundredths / 100.0
        for overhead in overheads:
            loss = 0.0
            for r in rows:
                estimated = scale * r.content + r.fixed + overhead * r.tool_parts
                loss += abs(math.log(r.growth / max(estimated, 1.0)))
            if best is None or loss < best[0] - 1e-12:
                best = (loss, scale, overhead)
    assert best is not None
    return best[1], best[2]


def claude_counter(scale: float, tool_overhead: int) -> HeuristicCounter:
    return HeuristicCounter(claude_profile(scale, tool_overhead))
