"""Recorded usage that cannot have measured its request, set aside.

A recording's usage is what the provider billed, and the replay trusts it three ways: as the bill, as
the size of each call the `recorded` policy reproduces, and as the anchor the token ledger counts from.
Some recordings carry usage that counts only part of the input: early Claude Code versions wrote each
call's uncached input (2-6 tokens) with its cache fields at 0, for requests of tens of thousands of
tokens. Trusted, such a figure bills a session at a tenth of its cost and tells the ledger a 40k-token
view is 4 tokens, so a policy fitted to it sends requests over the window.

No tokenizer packs more than about six characters of text into a token, and every request holds what
its call answers (the messages since the previous reply: the person's words, the tool results). A call
whose recorded input is under one token per `CHARS_PER_TOKEN_AT_MOST` characters of those did not count
its request; nor, when such a figure is a sliver (`SLIVER`) of the whole recording's text in tokens,
did any call of the same recording whose usage is no larger. (The
whole history is no bound: a recording may have compacted where its file shows no boundary, and its
later requests are rightly smaller than the messages before them.) Such usage moves to
`metadata[UNCOUNTED_USAGE]` (kept, not used): that call is replayed as a call without usage, and the
recording's bill is unknown when any call's was set aside.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace

from nova.messages import Message, SummaryPart, TextPart, ToolResultPart, ToolUsePart
from nova.model import usage_of
from nova.sessions.readers.base import ImportedSession

__all__ = ["CHARS_PER_TOKEN_AT_MOST", "SLIVER", "UNCOUNTED_USAGE", "checked_usage", "set_aside_uncounted_usage",
           "uncounted_usage_calls"]

CHARS_PER_TOKEN_AT_MOST = 10
SLIVER = 0.01
UNCOUNTED_USAGE = "usage_uncounted"
"""Metadata key of a recorded usage set aside: it counts less than its request held."""


def set_aside_uncounted_usage(messages: Sequence[Message]) -> tuple[list[Message], int]:
    """`messages` with the usage of every call that cannot have counted its request moved aside, and how
    many calls that was."""
    answered_chars = 0  # of the messages since the previous reply
    short: set[int] = set()  # positions of the calls whose input is under what they answered
    recording_chars = 0
    for index, message in enumerate(messages):
        usage = usage_of(message) if message.role == "assistant" else None
        if usage is not None and 0 < usage.context_tokens * CHARS_PER_TOKEN_AT_MOST < answered_chars:
            short.add(index)
        chars = _chars(message)
        recording_chars += chars
        answered_chars = 0 if message.role == "assistant" else answered_chars + chars
    if not short:
        return list(messages), 0
    ceiling = max(usage.context_tokens for i in short if (usage := usage_of(messages[i])) is not None)
    if ceiling * CHARS_PER_TOKEN_AT_MOST > SLIVER * recording_chars:
        ceiling = 0  # not the kind of figure that counts nothing: only those calls themselves
    out: list[Message] = []
    moved = 0
    for index, message in enumerate(messages):
        usage = usage_of(message) if message.role == "assistant" else None
        if usage is not None and (index in short or 0 < usage.context_tokens <= ceiling):
            metadata = {k: v for k, v in message.metadata.items() if k != "usage"}
            metadata[UNCOUNTED_USAGE] = message.metadata["usage"]
            message = replace(message, metadata=metadata)
            moved += 1
        out.append(message)
    return out, moved


def checked_usage(imported: ImportedSession) -> ImportedSession:
    """`imported` with `set_aside_uncounted_usage` applied to it, its sibling runs and its children."""
    messages, moved = set_aside_uncounted_usage(imported.messages)
    children = tuple(checked_usage(child) for child in imported.children)
    siblings = tuple(checked_usage(sibling) for sibling in imported.siblings)
    if not moved and children == imported.children and siblings == imported.siblings:
        return imported
    return replace(imported, messages=messages if moved else imported.messages, children=children, siblings=siblings)


def uncounted_usage_calls(messages: Sequence[Message]) -> int:
    """How many calls of `messages` had their usage set aside."""
    return sum(1 for m in messages if m.role == "assistant" and UNCOUNTED_USAGE in m.metadata)


def _chars(message: Message) -> int:
    total = 0
    for part in message.parts:
        if isinstance(part, TextPart | SummaryPart):
            total += len(part.text)
        elif isinstance(part, ToolResultPart):
            total += len(part.content)
        elif isinstance(part, ToolUsePart):
            total += len(json.dumps(dict(part.input), ensure_ascii=False, default=str))
    return total
