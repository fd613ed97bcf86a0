"""What each replayed call's view is made of, and what a compaction or a cut took out of it.

`Composition` splits a view's tokens by the kinds of the context picture (`nova.context.picture.KINDS`
without `free`): the system text (with the replay's placeholder for a fixed prompt the recording lacks),
the tool schemas, and each message by who put it there (`Message.origin`): a compaction summary is
`summary` (its restore attachment `observations`), compiler observations `observations`, recalled
memories `memory`, everything else `history`. A recording keeps its instruction files inside the system
prompt and nothing marks them, so `rules` stays 0 in a replay rather than being guessed.

`ViewChange` is one compaction or cut, found by comparing the messages before the view was built with
the view that was sent: which recorded messages were dropped (folded into the summary, or cut), which
were kept, and what Nova added (the summary, restore attachments).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nova.context.manifest import apportion
from nova.context.picture import KINDS
from nova.messages import Message, SummaryPart, TextPart, ThinkingPart, ToolResultPart, ToolUsePart
from nova.present.text import one_line

__all__ = ["COMPOSITION_KINDS", "EXCERPT_CHARS", "Composer", "MessageEntry", "ViewChange", "composition_json",
           "cut_change", "entries_of", "excerpt", "message_kinds", "tokens_of", "view_change"]

COMPOSITION_KINDS: tuple[str, ...] = tuple(k for k in KINDS if k != "free")
EXCERPT_CHARS = 120

Sizer = Callable[[Message], int]


def message_kinds(message: Message, tokens: int, count: Callable[[str], int]) -> dict[str, int]:
    """`tokens` (the message's measured size) split by kind. Only a summary message carries two kinds (the
    summary and the restore attachment after it), split in proportion to the text of each part."""
    if message.origin == "summary" or message.has("summary"):
        weights = {"summary": 0, "observations": 0}
        for part in message.parts:
            kind = "summary" if isinstance(part, SummaryPart) else "observations"
            weights[kind] += count(part.text if isinstance(part, TextPart | SummaryPart) else "")
        if not weights["observations"]:
            return {"summary": tokens}
        summary, rest = apportion(tokens, [weights["summary"], weights["observations"]])
        return {"summary": summary, "observations": rest}
    if message.origin == "context":
        return {"observations": tokens}
    if message.origin == "memory":
        return {"memory": tokens}
    return {"history": tokens}


class Composer:
    """Splits each call's view by kind (`composition`). The parts are the very measures a call's input is
    the sum of (the system text, the tool schemas, each message's size), so they add up to it exactly;
    only a summary message is split further, by `apportion`. A message's split is worked out once, since
    a replay sends the same message objects call after call."""

    def __init__(self, *, system: int, tools: int, size: Sizer, count: Callable[[str], int]) -> None:
        self.system, self.tools, self.size, self.count = system, tools, size, count
        self._index = {kind: i for i, kind in enumerate(COMPOSITION_KINDS)}
        # Keyed by object identity; the message is kept in the value so its id cannot be reused.
        self._kinds: dict[int, tuple[Message, tuple[tuple[int, int], ...]]] = {}

    def _split(self, message: Message) -> tuple[tuple[int, int], ...]:
        hit = self._kinds.get(id(message))
        if hit is None:
            split = tuple((self._index[k], t) for k, t in message_kinds(message, self.size(message), self.count).items())
            hit = self._kinds[id(message)] = (message, split)
        return hit[1]

    def composition(self, view: Sequence[Message]) -> dict[str, int]:
        """Tokens per kind for one call's view, in `COMPOSITION_KINDS` order; their sum is the call's input."""
        parts = [0] * len(COMPOSITION_KINDS)
        parts[self._index["system"]], parts[self._index["tools"]] = self.system, self.tools
        for m in view:
            for index, tokens in self._split(m):
                parts[index] += tokens
        return dict(zip(COMPOSITION_KINDS, parts, strict=True))


def excerpt(message: Message, limit: int = EXCERPT_CHARS) -> str:
    """One line saying what the message is: its text, the tool calls it makes, the output it returns."""
    chunks: list[str] = []
    for p in message.parts:
        if isinstance(p, ToolUsePart):
            args = " ".join(str(v) for v in p.input.values())
            chunks.append(f"{p.name}({args})")
        elif isinstance(p, ToolResultPart):
            chunks.append(p.content)
        elif isinstance(p, SummaryPart | TextPart):
            chunks.append(p.text)
        else:  # thinking, or an image (no words to show)
            chunks.append(p.thinking if isinstance(p, ThinkingPart) else "")
    return one_line(" ".join(chunks), limit)


@dataclass(frozen=True, slots=True)
class MessageEntry:
    """One message of a kept, dropped or added list."""

    role: str
    id: str
    tokens: int
    kind: str
    excerpt: str

    def to_json(self) -> dict[str, Any]:
        return {"role": self.role, "id": self.id, "tokens": self.tokens, "kind": self.kind, "excerpt": self.excerpt}


def entries_of(message: Message, tokens: int, *, count: Callable[[str], int],
               shown_id: str | None = None) -> list[MessageEntry]:
    """The message as list entries: one, or for a summary with a restore attachment two (the summary, then
    the attachment as `observations`), each with its share of `tokens` and its own excerpt."""
    shares = message_kinds(message, tokens, count)
    ident = shown_id or message.id
    if len(shares) == 1:
        kind = next(iter(shares))
        return [MessageEntry(role=message.role, id=ident, tokens=tokens, kind=kind, excerpt=excerpt(message))]
    summary = message.with_parts([p for p in message.parts if isinstance(p, SummaryPart)])
    attachment = message.with_parts([p for p in message.parts if not isinstance(p, SummaryPart)])
    return [MessageEntry(role=message.role, id=ident, tokens=shares["summary"], kind="summary",
                         excerpt=excerpt(summary)),
            MessageEntry(role=message.role, id=ident, tokens=shares["observations"], kind="observations",
                         excerpt=excerpt(attachment))]


@dataclass(frozen=True, slots=True)
class ViewChange:
    """One compaction or cut: `call` is the 1-based call whose view first shows it (calls + 1 for a forced
    compaction of the final view, which is never sent)."""

    call: int
    event: str
    """"compaction" (layer 2: older messages folded into a summary) or "truncate" (the oldest cut)."""
    forced: bool
    dropped: tuple[MessageEntry, ...]
    kept: tuple[MessageEntry, ...]
    """The messages before the change that are still in the view; empty for a cut, where it is the rest
    of the view (`view_messages`)."""
    added: tuple[MessageEntry, ...]
    view_messages: int

    def to_json(self) -> dict[str, Any]:
        return {"call": self.call, "event": self.event, "forced": self.forced, "view_messages": self.view_messages,
                "dropped": [e.to_json() for e in self.dropped], "kept": [e.to_json() for e in self.kept],
                "added": [e.to_json() for e in self.added]}


def tokens_of(entries: Sequence[MessageEntry]) -> int:
    return sum(e.tokens for e in entries)


def composition_json(parts: Mapping[str, int]) -> dict[str, int]:
    return {k: int(parts.get(k, 0)) for k in COMPOSITION_KINDS}


def view_change(*, call: int, event: str, forced: bool, before: Sequence[Message], after: Sequence[Message],
                shown_after: Sequence[Message], size: Sizer, count: Callable[[str], int],
                names: dict[str, str]) -> ViewChange:
    """The change from the messages `before` a compaction to the view `after` it. Nova's inserts get fresh
    ids; `shown_after` is `after` with them named by what they stand for (`names` keeps the name each
    insert was first shown under, so a summary folded by a later compaction is listed under it again)."""
    before_ids = {m.id for m in before}
    after_ids = {m.id for m in after}
    for m, shown in zip(after, shown_after, strict=True):
        if m.id not in before_ids and m.origin is not None:
            names.setdefault(m.id, shown.id)

    def entries(messages: Sequence[Message]) -> tuple[MessageEntry, ...]:
        return tuple(e for m in messages for e in entries_of(m, size(m), count=count, shown_id=names.get(m.id)))

    return ViewChange(call=call, event=event, forced=forced,
                      dropped=entries([m for m in before if m.id not in after_ids]),
                      kept=entries([m for m in after if m.id in before_ids]),
                      added=entries([m for m in after if m.id not in before_ids]),
                      view_messages=len(after))


def cut_change(*, call: int, previous: Sequence[Message], view: Sequence[Message], size: Sizer,
               count: Callable[[str], int]) -> ViewChange | None:
    """What a cut (truncation) took out since the previous call's view: the messages it showed that this
    view no longer does. None when nothing left."""
    ids = {m.id for m in view}
    gone = tuple(e for m in previous if m.id not in ids for e in entries_of(m, size(m), count=count))
    if not gone:
        return None
    return ViewChange(call=call, event="truncate", forced=False, dropped=gone, kept=(), added=(),
                      view_messages=len(view))
