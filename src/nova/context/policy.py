"""Policy conflicts (CTX-3): settle org policy, project rules, the current request and memories before
the model sees them.

Precedence is fixed and does not depend on where text sits in the prompt:

    org policy (~/.nova/policy.md) > project rules (NOVA.md, AGENTS.md, …) > current request > memory

A directive is one sentence or list line. Its polarity is negative when it forbids ("never", "do not",
"avoid", …), positive otherwise; its subject is the set of content words left after dropping polarity
and filler words. Two directives conflict when their polarities differ and one subject contains the
other (so "never push to main" conflicts with "push straight to main when tests pass", not with "push
the feature branch"). This is deliberately literal: a deterministic rule a reviewer can predict, not a
judgement. What happens on a conflict:

- a memory that conflicts with any higher source is suppressed (left out of the view, and the manifest
  says which rule it lost to);
- a project-rule line that conflicts with org policy is cut from the rules segment;
- a current request that conflicts with a higher source is not rewritten (it is the user's text), but
  the model gets one short resolution line naming the rule that wins.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from nova.errors import FileRefused
from nova.fs.safe_read import read_bytes

__all__ = [
    "PRECEDENCE",
    "Conflict",
    "Directive",
    "PolicyResolution",
    "PolicySource",
    "directives",
    "load_org_policy",
    "resolve",
]

Level = Literal["org", "project", "request", "memory"]
PRECEDENCE: tuple[Level, ...] = ("org", "project", "request", "memory")

_NEG = re.compile(r"\b(?:never|not|no|don't|dont|avoid|forbidden|prohibited|must not|mustn't|refuse)\b",
                  re.IGNORECASE)
_WORD = re.compile(r"[a-z0-9][a-z0-9_\-./]*")
_FILLER_WORDS = (
    "a an the to of for in on at by with and or but is are be been being it its this that these those "
    "you we i they he she them us our your my me do does did don't dont not no never always must should "
    "shall will would can could may might please only ever any all some use using prefer likes like "
    "wants want when whenever if then than as so just also avoid forbidden prohibited mustn't refuse"
)
_FILLER = frozenset(_FILLER_WORDS.split())
_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")


@dataclass(frozen=True, kw_only=True)
class PolicySource:
    level: Level
    id: str
    """`policy:<path>`, `rules:<path>`, `message:<id>`, `memory:<name>`."""
    text: str


@dataclass(frozen=True, kw_only=True)
class Directive:
    source: PolicySource
    text: str
    negative: bool
    subject: frozenset[str]


@dataclass(frozen=True, kw_only=True)
class Conflict:
    winner: Directive
    loser: Directive

    def reason(self) -> str:
        return (f"conflicts with {self.winner.source.level} rule {self.winner.text!r} "
                f"({self.winner.source.id}), which takes precedence")


@dataclass(frozen=True, kw_only=True)
class PolicyResolution:
    conflicts: tuple[Conflict, ...] = ()

    def suppressed(self, source_id: str) -> tuple[Conflict, ...]:
        """Conflicts this source lost."""
        return tuple(c for c in self.conflicts if c.loser.source.id == source_id)

    def cut_lines(self, source_id: str) -> frozenset[str]:
        return frozenset(c.loser.text for c in self.suppressed(source_id))

    def notes(self) -> list[str]:
        """One line per request conflict: what the model must follow instead."""
        return [f"The request's {c.loser.text!r} is overridden by the {c.winner.source.level} rule "
                f"{c.winner.text!r} ({c.winner.source.id})."
                for c in self.conflicts if c.loser.source.level == "request"]


def _subject(text: str) -> frozenset[str]:
    return frozenset(w.strip(".-/") for w in _WORD.findall(text.lower()) if w not in _FILLER and len(w) > 1)


def directives(source: PolicySource) -> list[Directive]:
    out: list[Directive] = []
    for raw in _SPLIT.split(source.text):
        line = raw.strip().lstrip("-*•# ").strip()
        if not line:
            continue
        subject = _subject(line)
        if subject:
            out.append(Directive(source=source, text=line, negative=bool(_NEG.search(line)), subject=subject))
    return out


def _conflict(higher: Directive, lower: Directive) -> bool:
    if higher.negative == lower.negative:
        return False
    small, big = sorted((higher.subject, lower.subject), key=len)
    return (len(small) >= 2 and small <= big) or (len(small) == 1 == len(big) and small == big)


def resolve(sources: Sequence[PolicySource]) -> PolicyResolution:
    """Every conflict between a source and a higher-ranked one, in a stable order (by the precedence of
    the losing source, then the order sources were given)."""
    by_level = {level: [d for s in sources if s.level == level for d in directives(s)] for level in PRECEDENCE}
    conflicts: list[Conflict] = []
    for rank, level in enumerate(PRECEDENCE):
        higher = [d for lv in PRECEDENCE[:rank] for d in by_level[lv]]
        for lower in by_level[level]:
            winner = next((h for h in higher if _conflict(h, lower)), None)
            if winner is not None:
                conflicts.append(Conflict(winner=winner, loser=lower))
    return PolicyResolution(conflicts=tuple(conflicts))


MAX_POLICY_BYTES = 1024 * 1024


def load_org_policy(path: Path) -> tuple[str, str] | None:
    """(text, sha256 prefix) of the organisation policy file, or None when there is none."""
    try:
        # A regular file only, bounded: a FIFO or a device named here must not hang every turn.
        text = read_bytes(path.expanduser(), limit=MAX_POLICY_BYTES, what="an organisation policy").decode("utf-8")
    except (OSError, UnicodeDecodeError, FileRefused):
        return None
    if not text.strip():
        return None
    return text.strip(), hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
