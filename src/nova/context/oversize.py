"""One message larger than its share of the budget, shown cut: head and tail kept, the middle replaced
by a note saying how much was cut and where the whole text is.

Spill (nova.context.spill) catches tool results as they arrive, but a pasted file in a user message, a
208k-character assistant message, an imported file or a re-read of a spilled file never pass through
it, and a single one of them can be larger than the whole window. `fit_message` cuts such a message
in the view; the raw transcript keeps it whole, and when the session has a directory the full text is
also written to a file the model can open with `read_file` (in parts, with offset and limit).

A cut message carries `metadata["cut"]` (original and kept tokens, why, where the full text is), which
the context manifest reports.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from nova.context.shown_paths import shown_path
from nova.fs.private import private_dir, write_private_text
from nova.messages import (
    Message,
    Part,
    SummaryPart,
    TextPart,
    ToolResultPart,
    ToolUsePart,
    harness_message,
    person_entries,
)
from nova.tokens import TokenCounter, count_message

__all__ = ["CUT_DIR", "CUT_MARK", "MIN_KEPT_TOKENS", "CutInfo", "cut_middle", "fit_message", "is_cut", "is_cut_text",
           "least_size"]

log = logging.getLogger(__name__)

CUT_DIR = "message-text"
# Never cut a part below this: a head and a tail too short to read are worse than the note alone.
MIN_KEPT_TOKENS = 48
# What the note itself costs, paid up front.
NOTE_TOKENS = 72
_HEAD_SHARE = 0.4
# How far back the tail may reach for the start of its first line.
_LINE_REACH = 240
CUT_MARK = "cut from the middle of this message to fit the context budget"


@dataclass(frozen=True, kw_only=True)
class CutInfo:
    tokens: int
    """The message's size before the cut."""
    kept: int
    """Its size after."""
    reason: str
    where: str
    """Where the full text is: a file (`Full output: PATH`) or the transcript."""

    def to_dict(self) -> dict[str, Any]:
        return {"tokens": self.tokens, "kept": self.kept, "reason": self.reason, "where": self.where}


def is_cut(message: Message) -> bool:
    return "cut" in message.metadata


def is_cut_text(text: str) -> bool:
    """A text already cut here (layer 1 leaves it alone: its full text is saved already)."""
    return CUT_MARK in text


def cut_middle(text: str, *, keep_tokens: int, counter: TokenCounter, where: str) -> str:
    """`text` with its middle replaced by a note, at most about `keep_tokens` tokens in all."""
    total = counter.count(text)
    if total <= keep_tokens:
        return text
    room = max(MIN_KEPT_TOKENS, keep_tokens - NOTE_TOKENS)
    chars = max(1, int(len(text) * room / max(1, total)))
    result = text
    for _ in range(6):  # the estimate is per text: a few rounds settle dense and sparse texts alike
        head_n = int(chars * _HEAD_SHARE)
        tail_n = chars - head_n
        if tail_n:
            # The tail starts at the beginning of the line it would cut into, paid for by the head: the
            # last lines (an error, a test run's verdict) are read whole or not at all.
            start = len(text) - tail_n
            shift = start - (text.rfind("\n", 0, start) + 1)
            if 0 < shift <= min(_LINE_REACH, head_n // 2):
                head_n, tail_n = head_n - shift, tail_n + shift
        head, tail = text[:head_n], text[len(text) - tail_n:] if tail_n else ""
        cut = len(text) - len(head) - len(tail)
        note = (f"\n[... {cut:,} of {len(text):,} characters (about {total - room:,} tokens) {CUT_MARK}. "
                f"{where}]\n")
        result = f"{head}{note}{tail}"
        if counter.count(result) <= keep_tokens or chars <= 16:
            break
        chars = int(chars * 0.75)
    return result


def _placeholder(text: str) -> bool:
    from nova.context.spill import is_placeholder

    return is_placeholder(text)


def _frozen(text: str) -> bool:
    return _placeholder(text) or is_cut_text(text) or "chars snipped ... Full output:" in text


def _text_parts(message: Message, *, keep_person: bool = False) -> list[tuple[int, str, str]]:
    """(part index, argument key or "", text) of every text a cut may shorten. Thinking is never cut:
    its signature holds only for the text as written. With `keep_person`, neither is what a person typed
    (a correction beside tool results stays whole while the results are cut)."""
    person = _person_parts(message) if keep_person else set()
    out: list[tuple[int, str, str]] = []
    for i, part in enumerate(message.parts):
        if i in person:
            continue
        if isinstance(part, TextPart | SummaryPart):
            out.append((i, "", part.text))
        elif isinstance(part, ToolResultPart):
            out.append((i, "", part.content))
        elif isinstance(part, ToolUsePart):
            out.extend((i, key, value) for key, value in part.input.items() if isinstance(value, str))
    return out


def _person_parts(message: Message) -> set[int]:
    """Indexes of the text parts a person typed (`nova.messages.person_entries`)."""
    if message.role != "user" or not person_entries(message):
        return set()
    whole = message.origin is not None or harness_message(message)
    return {i for i, p in enumerate(message.parts)
            if isinstance(p, TextPart) and not p.harness and (p.entry or not whole) and p.text.strip()}


def least_size(message: Message, *, counter: TokenCounter, floor: int = 0, force: bool = False,
               keep_person: bool = False) -> int:
    """About the smallest `fit_message` can make `message` (cut with `share` down to `floor`): each text
    it may cut keeps a head, a note and a tail; spill placeholders (and, unless `force`, texts cut
    before) stay as they are, and with `keep_person` what a person typed."""
    size = count_message(message, counter)
    least = MIN_KEPT_TOKENS + NOTE_TOKENS
    saved = sum(max(0, counter.count(text) - least) for _, _, text in _text_parts(message, keep_person=keep_person)
                if not (_frozen(text) and not (force and not _placeholder(text))))
    return max(min(size, floor), size - saved)


def fit_message(
    message: Message,
    *,
    share: int,
    counter: TokenCounter,
    save_dir: Path | None = None,
    transcript: str = "",
    reason: str = "",
    size: int | None = None,
    original: Message | None = None,
    force: bool = False,
    keep_person: bool = False,
) -> Message | None:
    """The message cut to about `share` tokens, or None when it already fits (or holds nothing that can
    be cut). The largest texts are cut first; each keeps its head and tail. `original` is the message
    as first seen, when `message` was cut before: the saved full text is always the original's."""
    size = count_message(message, counter) if size is None else size
    if size <= share:
        return None
    # A spill placeholder or a text cut before is bounded already, and its pointer must stay whole.
    # `force` (the last resort before a request over the window) cuts those too.
    # A spill placeholder never: it is small, and its file holds the output as the tool gave it.
    texts = sorted((t for t in _text_parts(message, keep_person=keep_person)
                    if not (_frozen(t[2]) and not (force and not _placeholder(t[2])))),
                   key=lambda t: len(t[2]), reverse=True)
    if not texts:
        return None
    where = _save(original or message, save_dir, transcript)
    # A text cut before is cut again from its original, so the older note and its pointer are not
    # themselves sliced in two (a half pointer names no file).
    first_seen = _first_seen_texts(message, original)
    over = size - share
    new_texts: dict[tuple[int, str], str] = {}
    for index, key, text in texts:
        if over <= 0:
            break
        tokens = counter.count(text)
        if tokens <= MIN_KEPT_TOKENS + NOTE_TOKENS:
            continue
        target = max(MIN_KEPT_TOKENS + NOTE_TOKENS, tokens - over)
        source = first_seen.get((index, key), text) if _frozen(text) else text
        shorter = cut_middle(source, keep_tokens=target, counter=counter, where=where)
        if shorter == text:
            continue
        new_texts[(index, key)] = shorter
        over -= tokens - counter.count(shorter)
    if not new_texts:
        return None
    parts: list[Part] = []
    for i, part in enumerate(message.parts):
        if isinstance(part, TextPart) and (i, "") in new_texts:
            parts.append(replace(part, text=new_texts[(i, "")]))
        elif isinstance(part, SummaryPart) and (i, "") in new_texts:
            parts.append(SummaryPart(text=new_texts[(i, "")], covers=part.covers))
        elif isinstance(part, ToolResultPart) and (i, "") in new_texts:
            parts.append(ToolResultPart(part.tool_use_id, new_texts[(i, "")], part.is_error))
        elif isinstance(part, ToolUsePart) and any(k[0] == i for k in new_texts):
            parts.append(ToolUsePart(part.id, part.name,
                                     {k: new_texts.get((i, k), v) for k, v in part.input.items()}))
        else:
            parts.append(part)
    cut = message.with_parts(parts)
    info = CutInfo(tokens=size, kept=count_message(cut, counter), reason=reason or
                   f"one message of {size:,} tokens is over its share of the context budget ({share:,} tokens)",
                   where=where)
    return cut.with_metadata(cut=info.to_dict())


def _first_seen_texts(message: Message, original: Message | None) -> dict[tuple[int, str], str]:
    """The original's texts by (part index, argument key), when it has the same parts as `message`."""
    if original is None or original is message or len(original.parts) != len(message.parts):
        return {}
    return {(index, key): text for index, key, text in _text_parts(original) if not _placeholder(text)}


def _save(message: Message, save_dir: Path | None, transcript: str) -> str:
    """Where the full text can be read: a file of its own when the session has a directory."""
    fallback = (f"The whole text is message {message.id} of the session transcript"
                + (f" ({transcript})" if transcript else ""))
    full = _full_text(message)
    if message.origin is not None or message.has("summary"):
        # Nova's own insert (a compaction summary) is in no transcript, and its id is made fresh each
        # run: its file is named by its content, so the same history gives the same note.
        name = f"{message.origin or 'summary'}-{hashlib.sha256(full.encode('utf-8', 'surrogatepass')).hexdigest()[:16]}"
        fallback = "The whole text is not kept anywhere else: it was written by Nova for this view"
    else:
        name = message.id
    if save_dir is None:
        return fallback
    path = save_dir / f"{_safe(name)}.txt"
    try:
        private_dir(save_dir)
        write_private_text(path, full)
    except OSError as exc:
        log.warning("could not save the full text of message %s to %s: %s", message.id, path, exc)
        return fallback
    return f"Read the whole text with read_file, in parts (offset, limit). Full output: {shown_path(path)}"


def _full_text(message: Message) -> str:
    chunks: list[str] = []
    for _, key, text in _text_parts(message):
        chunks.append(f"[{key}]\n{text}" if key else text)
    return "\n\n".join(chunks)


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name).lstrip(".") or "message"

