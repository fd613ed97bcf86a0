"""Dedupe and conflict detection among retrieved memories, and suppression of memories that contradict
a project rule. Cheap and deterministic, no model: two memories are about the same thing when most of
their content words are shared; they disagree when one is negated and the other is not, or when they
name different numbers (port 8080 against port 9090). Session records are not compared: what someone
said in one session and changed later is history, not a conflict."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from nova.memory.retrieval.text import content_words, tokenize

__all__ = ["Claim", "Conflict", "RuleConflict", "claim", "disagree", "is_duplicate", "rule_conflict", "why_they_differ"]

_NEGATIONS = frozenset({"not", "never", "no", "don", "doesn", "didn", "isn", "aren", "won", "shouldn", "mustn",
                        "cannot", "avoid", "stop", "without", "disable", "disabled", "forbid", "forbidden", "nor"})
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_SAME_SUBJECT = 0.5
_DUPLICATE = 0.8
_RULE_OVERLAP = 0.6


@dataclass(frozen=True, slots=True)
class Claim:
    words: frozenset[str]
    negated: bool
    numbers: frozenset[str]


def claim(text: str) -> Claim:
    raw = tokenize(text)
    negated = sum(1 for w in raw if w in _NEGATIONS) % 2 == 1
    words = frozenset(w for w in content_words(text) if w not in _NEGATIONS and not _NUMBER.fullmatch(w))
    return Claim(words=words, negated=negated, numbers=frozenset(_NUMBER.findall(text)))


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


def _differ(a: Claim, b: Claim) -> bool:
    return a.negated != b.negated or bool(a.numbers and b.numbers and a.numbers != b.numbers)


def why_they_differ(a: Claim, b: Claim) -> str:
    if a.negated != b.negated:
        return "same subject, one says not"
    return f"same subject, different numbers ({', '.join(sorted(a.numbers))} vs {', '.join(sorted(b.numbers))})"


def disagree(a: Claim, b: Claim) -> bool:
    """Same subject, opposite polarity or different numbers."""
    return _jaccard(a.words, b.words) >= _SAME_SUBJECT and _differ(a, b)


def is_duplicate(a: Claim, b: Claim) -> bool:
    return _jaccard(a.words, b.words) >= _DUPLICATE and not _differ(a, b)


@dataclass(frozen=True, slots=True, kw_only=True)
class Conflict:
    ids: tuple[str, str]
    why: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RuleConflict:
    id: str
    rule: str


def rule_conflict(memory: Claim, rules: Sequence[tuple[str, Claim]]) -> str | None:
    """The first project rule line the memory contradicts, if any. A rule line is usually shorter than the
    memory, so overlap is measured against the smaller of the two."""
    for line, rule in rules:
        smaller = min(len(memory.words), len(rule.words))
        if smaller and len(memory.words & rule.words) / smaller >= _RULE_OVERLAP and _differ(memory, rule):
            return line
    return None
