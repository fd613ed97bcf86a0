"""Memory usefulness (EVAL-1, unit: retrieved items): of the memories recalled into the view, the fraction
the agent then used.

A recalled memory is one memory of a recall block: in a recorded Nova session, a user message with
`origin == "memory"` (`nova.memory.runtime`), one item per `<memory>` element, so a memory recalled on
two turns counts twice; in a scripted scenario (`nova.evaluation.memory_scenario`), what
`nova.memory.recall.recall` returned for the turn.

It counts as used when one of its distinctive terms appears in what the agent did next: the text and
the tool-call arguments of the assistant messages after the recall and before the next recall (in a
scenario, the turn's answer). A term the user's own request already held does not count (the agent may
have it from the user). A memory with no distinctive term can never be seen used and counts as unused.

Distinctive terms of a memory's body (`distinctive_terms`), compared case-sensitively, as whole words
where they begin or end with a letter or digit:
- a code span (`make check`), unless it is a stop word or shorter than 3 characters;
- a double-quoted string of several words ("Do not change the public API.") or of one shaped word;
- a shaped word: a path or URL (holds `/` or `\\`, unless every piece is a stop word as in and/or), a file
  or dotted name (parser.py, evil.example, os.path; not e.g.), a number or a word with a digit of at
  least two characters (8080, 3.11, eu-west-3), an identifier with `_` or an inner capital (NOVA_HOME,
  MemoryStore), a command-line flag (--no-verify, -q), a `$VARIABLE`, a word with `@` or `=` inside.
Plain words, capitalised or not, never count, however rare.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nova.context.summarize import is_user_message
from nova.evaluation.metrics import Ratio
from nova.memory.recall import read_recall_block
from nova.memory.retrieval.text import STOP_WORDS
from nova.messages import Message, TextPart, ToolUsePart

__all__ = [
    "NO_RECALL",
    "RecalledUse",
    "action_text",
    "distinctive_terms",
    "recorded_uses",
    "used_term",
    "usefulness",
    "uses_of",
]

NO_RECALL = "no memory was recalled"
UNIT = "retrieved items"

_SPAN = re.compile(r"`([^`\n]+)`|\"([^\"\n]+)\"|\u201c([^\u201d\n]+)\u201d")
_EDGES = "\"'`.,;:!?()[]{}<>*\u201c\u201d"


def _shaped(word: str) -> bool:
    if len(word) < 2:
        return False
    if any(c.isdigit() for c in word):
        return True
    if "_" in word.strip("_") or re.search(r"[a-z][A-Z]", word):
        return True
    if re.fullmatch(r"--?[A-Za-z][\w-]*", word) or re.fullmatch(r"\$\{?[A-Za-z_]\w*\}?", word):
        return True
    if re.search(r"\w[@=]\S", word) or (word.startswith("@") and len(word) > 2):
        return True
    if "/" in word or "\\" in word:
        pieces = [p for p in re.split(r"[/\\]", word.lower()) if p]
        return any(p not in STOP_WORDS and len(p) > 1 for p in pieces)
    if re.search(r"\w\.\w", word):
        return any(len(p) >= 2 for p in word.split("."))
    return False


def distinctive_terms(body: str) -> list[str]:
    """The terms of `body` whose use can be seen (the module docstring says which), in order, once each."""
    found: dict[str, None] = {}
    for match in _SPAN.finditer(body):
        code, quoted = match[1], match[2] or match[3]
        if code is not None:
            span = code.strip()
            if len(span) >= 3 and span.lower() not in STOP_WORDS:
                found[span] = None
        elif quoted is not None:
            span = " ".join(quoted.split())
            if len(span.split()) > 1 or _shaped(span.strip(_EDGES)):
                found[span] = None
    for raw in body.split():
        word = raw.strip(_EDGES)
        if _shaped(word):
            found[word] = None
    return list(found)


def _pattern(term: str) -> re.Pattern[str]:
    left = r"(?<!\w)" if term[:1].isalnum() or term[:1] == "_" else ""
    right = r"(?!\w)" if term[-1:].isalnum() or term[-1:] == "_" else ""
    return re.compile(left + re.escape(term) + right)


def _holds(text: str, term: str) -> bool:
    return bool(text) and _pattern(term).search(" ".join(text.split()) if " " in term else text) is not None


def used_term(terms: Iterable[str], after: str, *, request: str = "") -> str | None:
    """The first of `terms` that `after` holds and `request` does not; None when no term is used."""
    for term in terms:
        if not _holds(request, term) and _holds(after, term):
            return term
    return None


def _strings(value: object) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def action_text(messages: Iterable[Message]) -> str:
    """What the agent did in `messages`: its assistant text and every string of its tool-call arguments."""
    out: list[str] = []
    for m in messages:
        if m.role != "assistant":
            continue
        for part in m.parts:
            if isinstance(part, TextPart):
                out.append(part.text)
            elif isinstance(part, ToolUsePart):
                out.extend(_strings(part.input))
    return "\n".join(out)


@dataclass(frozen=True, slots=True, kw_only=True)
class RecalledUse:
    """One recalled memory and whether what the agent did next used it."""

    memory: str
    recall: int
    """Which recall (1: the first) it came with; in a scenario, the turn."""
    terms: tuple[str, ...]
    used: str | None
    """The term seen used; None: unused."""

    def to_json(self) -> dict[str, Any]:
        return {"memory": self.memory, "recall": self.recall, "used": self.used is not None,
                "term": self.used, "terms": list(self.terms)}


def uses_of(recalled: Sequence[tuple[str, str]], after: str, *, request: str, recall: int) -> list[RecalledUse]:
    uses = []
    for name, body in recalled:
        terms = tuple(distinctive_terms(body))
        uses.append(RecalledUse(memory=name, recall=recall, terms=terms,
                                used=used_term(terms, after, request=request)))
    return uses


def recorded_uses(messages: Sequence[Message]) -> list[RecalledUse]:
    """Every memory recalled in a recorded session, with whether the agent used it before the next recall."""
    uses: list[RecalledUse] = []
    request = ""
    recall = 0
    for index, message in enumerate(messages):
        if is_user_message(message):
            request = message.text
            continue
        if message.origin != "memory":
            continue
        recall += 1
        recalled = read_recall_block(message.text)
        if not recalled:  # no element to read: the names the recall recorded, with no text to find
            recalled = [(str(name), "") for name in message.metadata.get("memories") or ()]
        after = []
        for later in messages[index + 1:]:
            if later.origin == "memory":
                break
            after.append(later)
        uses += uses_of(recalled, action_text(after), request=request, recall=recall)
    return uses


def usefulness(uses: Sequence[RecalledUse]) -> Ratio:
    """Recalled memories used ÷ recalled memories (retrieved items); n/a when none was recalled."""
    return Ratio(sum(u.used is not None for u in uses), len(uses), UNIT, na=NO_RECALL)
