"""Invariants every model view keeps, each its own checker (used by tests, replay and the property tests).

- `check_tool_pairing`: every tool_use is answered by exactly one tool_result in the next message, and
  every tool_result answers a tool_use of the message before it (a missing or stray pair is an HTTP 400).
  `PairingChecker` gives the same answer for the views of one session, redoing only what changed (the
  loop checks every request it sends, so a check over the whole history would grow with it).
- `check_thinking_integrity`: every thinking block in the view is byte-identical (text and signature) to
  the one the model produced, and a tool loop's thinking blocks are either all there or all gone.
- `check_nothing_lost`: every raw message is either in the view or covered by a summary, and every cut
  or spilled output points to a readable file holding the original text.

Checkers return a list of `Violation`s (empty when the view is sound) rather than raising, so replay
can count them and tests can show all of them at once.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from nova.history.incremental import LastSeen
from nova.messages import Message, SummaryPart, ThinkingPart, ToolResultPart, ToolUsePart

__all__ = [
    "PairingChecker",
    "Violation",
    "check_nothing_lost",
    "check_thinking_integrity",
    "check_tool_pairing",
    "check_view",
]

_POINTER = re.compile(r"(?:Full output: |Full output saved to: )([^\]\n]+?)(?:\]|\n|$)")


@dataclass(frozen=True, slots=True)
class Violation:
    rule: str
    index: int
    detail: str

    def __str__(self) -> str:
        return f"{self.rule} at message {self.index}: {self.detail}"


def check_tool_pairing(view: Sequence[Message]) -> list[Violation]:
    return _pairing_problems(view, 0)


def _pairing_problems(view: Sequence[Message], start: int) -> list[Violation]:
    """The pairing violations found at messages `start` onwards. Each message's verdict depends only on
    itself and its two neighbours, which is what lets `PairingChecker` redo only the end of a view."""
    problems: list[Violation] = []
    for i in range(start, len(view)):
        message = view[i]
        uses = message.tool_uses()
        if uses:
            nxt = view[i + 1] if i + 1 < len(view) else None
            answered = Counter(r.tool_use_id for r in nxt.tool_results()) if nxt is not None else Counter()
            for use in uses:
                count = answered.get(use.id, 0)
                if count != 1:
                    problems.append(Violation("tool_pairing", i, f"tool_use {use.id} has {count} results next"))
        results = message.tool_results()
        if results:
            previous = {u.id for u in view[i - 1].tool_uses()} if i > 0 else set()
            seen: Counter[str] = Counter()
            for result in results:
                seen[result.tool_use_id] += 1
                if result.tool_use_id not in previous:
                    problems.append(Violation("tool_pairing", i, f"tool_result {result.tool_use_id} answers "
                                                                 "no tool_use of the previous message"))
            problems.extend(Violation("tool_pairing", i, f"tool_use {use_id} answered {n} times")
                            for use_id, n in seen.items() if n > 1)
    return problems


class PairingChecker:
    """`check_tool_pairing` for the views of one session, at a cost that follows what changed.

    It keeps the last view it checked and that view's violations. A new view is compared with it
    (`LastSeen`); a message's verdict depends on itself and its neighbours, so verdicts up to two
    before the first changed message stand and only the rest is checked again: the new messages of an
    appended turn, everything after a snipped message, the whole view after a compaction. The answer is
    always exactly `check_tool_pairing(view)`."""

    def __init__(self) -> None:
        self._view = LastSeen()
        self._found: list[Violation] = []

    def check(self, view: Sequence[Message]) -> list[Violation]:
        shared = self._view.update(view)
        start = max(shared - 1, 0)  # the last shared message may have lost or gained its answer
        del self._found[bisect_left(self._found, start, key=lambda v: v.index):]
        self._found.extend(_pairing_problems(self._view.items, start))
        return list(self._found)


def _loops(messages: Sequence[Message]) -> list[list[int]]:
    """Indexes of the assistant messages of each tool loop (a run of assistant turns joined by results)."""
    loops: list[list[int]] = []
    current: list[int] = []
    for i, m in enumerate(messages):
        if m.role == "assistant":
            current.append(i)
        elif m.role == "user" and m.has("tool_result"):
            continue
        elif current:
            loops.append(current)
            current = []
    if current:
        loops.append(current)
    return loops


def check_thinking_integrity(view: Sequence[Message], raw: Mapping[str, Message]) -> list[Violation]:
    """`raw`: the messages as the model produced them, by id."""
    problems: list[Violation] = []
    for i, message in enumerate(view):
        thinking = [p for p in message.parts if isinstance(p, ThinkingPart)]
        if not thinking:
            continue
        original = raw.get(message.id)
        if original is None:
            continue
        expected = [p for p in original.parts if isinstance(p, ThinkingPart)]
        if thinking != expected:
            problems.append(Violation("thinking", i, f"thinking blocks of {message.id} changed"))
    for loop in _loops(view):
        had = [any(isinstance(p, ThinkingPart) for p in raw[view[i].id].parts) if view[i].id in raw else None
               for i in loop]
        has = [any(isinstance(p, ThinkingPart) for p in view[i].parts) for i in loop]
        for i, before, now in zip(loop, had, has, strict=True):
            if before and not now:
                problems.append(Violation("thinking", i, "a thinking block was dropped from part of a tool loop"))
    return problems


def check_nothing_lost(view: Sequence[Message], raw: Mapping[str, Message]) -> list[Violation]:
    """Every raw message is visible or covered by a summary; every cut or spilled text is on disk whole."""
    problems: list[Violation] = []
    visible = {m.id for m in view}
    covered = {c for m in view for p in m.parts if isinstance(p, SummaryPart) for c in p.covers}
    for message_id in raw:
        if message_id not in visible and message_id not in covered:
            problems.append(Violation("nothing_lost", -1, f"raw message {message_id} is neither in view nor covered"))
    for i, message in enumerate(view):
        original = raw.get(message.id)
        if original is None or original is message:
            continue
        before = {p.tool_use_id: p.content for p in original.parts if isinstance(p, ToolResultPart)}
        for part in message.parts:
            text = part.content if isinstance(part, ToolResultPart) else ""
            if isinstance(part, ToolResultPart) and text != before.get(part.tool_use_id, text):
                problems.extend(_pointer_problems(i, text, before[part.tool_use_id]))
            elif isinstance(part, ToolUsePart):
                for value in part.input.values():
                    if isinstance(value, str) and "chars snipped" in value and not _pointer_ok(value, None):
                        problems.append(Violation("nothing_lost", i, f"cut input of {part.id} has no readable file"))
    return problems


def _pointer_ok(text: str, original: str | None) -> bool:
    match = _POINTER.search(text)
    if match is None:
        return False
    path = Path(match.group(1).strip())
    try:
        saved = path.read_text(encoding="utf-8")
    except OSError:
        return False
    return original is None or original in saved or saved == original


def _pointer_problems(index: int, text: str, original: str) -> list[Violation]:
    if _pointer_ok(text, original):
        return []
    return [Violation("nothing_lost", index, "a cut or spilled output has no readable file with the original")]


def check_view(view: Sequence[Message], raw: Mapping[str, Message] | None = None) -> list[Violation]:
    """All view-level checks: pairing always, thinking integrity when the raw messages are known."""
    problems = check_tool_pairing(view)
    if raw is not None:
        problems += check_thinking_integrity(view, raw)
    return problems
