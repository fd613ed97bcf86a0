"""Multi-stage retrieval (SPEC MEM-9) over memories and past session records, with no model call:

1. hard filters (`HardFilters`): project, user, time, type, validity, review state;
2. recall: BM25 over each record's own words (its speaker, text and date), BM25 over its neighbours in
   the same session (a reply often only makes sense with the question before it), BM25 over its whole
   session (a session about the topic lifts all its turns), and cosine similarity of MiniLM vectors when
   the optional encoder is installed;
3. fusion and rerank: relevance (keyword, normalised, plus vector) times a boost when the query names
   the record's speaker, plus small terms for trust, recency, cost and risk;
4. dedupe and conflict detection among memories, and suppression of memories contradicting a project
   rule (`nova.memory.retrieval.conflicts`);
5. the hits, each with the scores of every stage, and a manifest of what each stage did.

Rendering (`render_evidence`) and the log (`RetrievalLog`) are separate steps the caller takes.
"""

from __future__ import annotations

import heapq
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from operator import itemgetter
from typing import Any

from nova.memory.retrieval.conflicts import (
    Claim,
    Conflict,
    RuleConflict,
    claim,
    disagree,
    is_duplicate,
    rule_conflict,
    why_they_differ,
)
from nova.memory.retrieval.embed import Encoder, unavailable_reason
from nova.memory.retrieval.filters import HardFilters
from nova.memory.retrieval.keyword import BM25Index
from nova.memory.retrieval.records import Record
from nova.memory.retrieval.text import content_words, tokenize

__all__ = ["Hit", "RetrievalIndex", "SearchResult", "Weights", "indexed_text"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Weights:
    """Fusion and rerank weights. The keyword ones were tuned on LoCoMo conversations 1-5 and checked on
    6-10 (benchmarks/locomo.py); the others are small by design, as tie-breakers between records that
    are about equally relevant."""

    context: float = 0.5
    """Neighbouring turns' BM25, relative to the record's own."""
    window: int = 2
    """Neighbours on each side that count as context."""
    group: float = 5.0
    """Session-level BM25, scaled to the best session's score."""
    speaker: float = 0.3
    """Relative boost when the query names the record's speaker."""
    vector: float = 0.5
    """Cosine similarity, added to the keyword relevance scaled to 0..1."""
    trust: float = 0.1
    recency: float = 0.05
    recency_half_life_days: float = 180.0
    cost: float = 0.02
    """Per thousand tokens of snippet."""
    risk: float = 0.2


@dataclass(frozen=True, slots=True, kw_only=True)
class Hit:
    record: Record
    score: float
    scores: dict[str, float]
    """Every stage's contribution: keyword, context, group, vector, relevance, speaker, trust, recency,
    cost, risk."""
    conflicts_with: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchResult:
    query: str
    hits: tuple[Hit, ...]
    stages: dict[str, Any]
    conflicts: tuple[Conflict, ...] = ()
    suppressed: tuple[RuleConflict, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "stages": self.stages,
            "hits": [
                {"id": h.record.id, "kind": h.record.kind, "type": h.record.type, "title": h.record.title,
                 "source": h.record.source, "score": round(h.score, 4),
                 "scores": {k: round(v, 4) for k, v in h.scores.items()},
                 "conflicts_with": list(h.conflicts_with), "text": h.record.text}
                for h in self.hits
            ],
            "conflicts": [{"ids": list(c.ids), "why": c.why} for c in self.conflicts],
            "suppressed": [{"id": s.id, "rule": s.rule} for s in self.suppressed],
        }


def indexed_text(record: Record) -> str:
    """The text a record is indexed (and embedded) under."""
    return " ".join(part for part in (record.title, record.speaker, record.text, record.date_label) if part)


class RetrievalIndex:
    """Keyword (and optionally vector) indexes over a fixed set of records, built once, queried many
    times. Filters apply at query time, so one index serves every filter."""

    rerank_depth = 100

    def __init__(self, records: Sequence[Record], *, encoder: Encoder | None = None,
                 weights: Weights | None = None, rules: Sequence[str] = (), vectors: Any = None,
                 terms: Sequence[list[str]] | None = None) -> None:
        """`vectors`, when given, are the records' embeddings computed earlier by `encoder` (one row per
        record, in order), so a caller that keeps them does not pay for encoding again; `terms` likewise
        are the records' ranking terms, `content_words(indexed_text(record))`, kept by an index that
        stored them (the session index does)."""
        self.records = tuple(records)
        self.weights = weights or Weights()
        own = list(terms) if terms is not None else [content_words(indexed_text(r)) for r in self.records]
        self._own = BM25Index(own).term_weights()
        self._context = BM25Index(self._neighbour_words(own)).term_weights()
        # A record's own words and its neighbours' are fused at build time into one posting list per
        # term, so a query walks each of its terms' postings once.
        self._fused: dict[str, list[tuple[int, float]]] = {}
        for term in self._own.keys() | self._context.keys():
            mine, near = self._own.get(term, {}), self._context.get(term, {})
            self._fused[term] = [(i, mine.get(i, 0.0) + self.weights.context * near.get(i, 0.0))
                                 for i in mine.keys() | near.keys()]
        groups: dict[str, list[str]] = defaultdict(list)
        for record, words in zip(self.records, own, strict=True):
            if record.group is not None:
                groups[record.group].extend(words)
        self._group_names = list(groups)
        self._groups = BM25Index([groups[name] for name in self._group_names])
        group_of = {name: i for i, name in enumerate(self._group_names)}
        self._group_index = [group_of[r.group] if r.group is not None else None for r in self.records]
        self._speakers = {r.speaker.lower() for r in self.records if r.speaker}
        self._claims: dict[int, Claim] = {i: claim(r.text) for i, r in enumerate(self.records) if r.kind == "memory"}
        self._rules = [(line, claim(line)) for line in _rule_lines(rules)]
        self.encoder = encoder
        self._vectors: Any = None
        if encoder is not None and self.records:
            self._vectors = vectors if vectors is not None else encoder.encode([indexed_text(r) for r in self.records])
        self._vector_off = "" if encoder is not None else f"off: {unavailable_reason() or 'not enabled'}"
        self._filter_cache: tuple[HardFilters, list[bool], dict[str, int]] | None = None

    def _neighbour_words(self, own: Sequence[list[str]]) -> list[list[str]]:
        by_group: dict[str, list[int]] = defaultdict(list)
        for i, record in enumerate(self.records):
            if record.group is not None:
                by_group[record.group].append(i)
        context: list[list[str]] = [[] for _ in self.records]
        window = self.weights.window
        for members in by_group.values():
            members.sort(key=lambda i: self.records[i].position)
            for slot, i in enumerate(members):
                for other in members[max(0, slot - window) : slot + window + 1]:
                    if other != i:
                        context[i].extend(own[other])
        return context

    def _allowed(self, filters: HardFilters) -> tuple[list[bool], dict[str, int]]:
        if self._filter_cache is not None and self._filter_cache[0] == filters:
            return self._filter_cache[1], self._filter_cache[2]
        allowed = []
        excluded: dict[str, int] = defaultdict(int)
        for record in self.records:
            reason = filters.reason_to_exclude(record)
            allowed.append(reason is None)
            if reason is not None:
                excluded[reason] += 1
        self._filter_cache = (filters, allowed, dict(excluded))
        return allowed, dict(excluded)

    def search(self, query: str, *, filters: HardFilters | None = None, limit: int = 10,
               now: datetime | None = None, query_vector: Any = None) -> SearchResult:
        """`query_vector`, when given, is `query` encoded earlier by the same encoder (a caller that
        searched a larger set of vectors with it first need not encode it twice)."""
        filters = filters or HardFilters()
        w = self.weights
        moment = now or filters.now or datetime.now(UTC)
        allowed, excluded = self._allowed(filters)
        terms = content_words(query)
        unique = set(terms)
        group_scores = self._groups.scores(unique)
        best_group = max(group_scores.values(), default=0.0) or 1.0
        vector_scores: dict[int, float] = {}
        if self._vectors is not None and self.encoder is not None:
            vector = query_vector if query_vector is not None else self.encoder.encode([query])[0]
            cosines = self._vectors @ vector
            for i in cosines.argsort()[::-1][:50]:
                vector_scores[int(i)] = float(cosines[i])
        named = {w_ for w_ in tokenize(query) if w_ in self._speakers}

        # Fusion first, over every candidate, with plain dict arithmetic; the rerank below then looks at
        # only the best `rerank_depth` of them, which keeps a query in the low milliseconds.
        fused: dict[int, float] = defaultdict(float)
        for term in unique:
            for i, weight in self._fused.get(term, ()):
                fused[i] += weight
        if excluded:
            fused = defaultdict(float, {i: v for i, v in fused.items() if allowed[i]})
        keyword_candidates = len(fused)
        for i in vector_scores:
            if allowed[i]:
                fused[i] += 0.0
        group_weight = {g: w.group * s / best_group for g, s in group_scores.items()}
        if group_weight:
            group_index = self._group_index
            for i in fused:
                group = group_index[i]
                if group is not None:
                    fused[i] += group_weight.get(group, 0.0)
        best_keyword = max(fused.values(), default=0.0) or 1.0
        pre = fused
        if vector_scores:
            pre = defaultdict(float, {i: f / best_keyword + w.vector * max(vector_scores.get(i, 0.0), 0.0)
                                      for i, f in fused.items()})
        shortlist = heapq.nlargest(self.rerank_depth, pre.items(), key=itemgetter(1))
        raw: dict[int, dict[str, float]] = {}
        for i, _ in shortlist:
            group = self._group_index[i]
            raw[i] = {
                "keyword": sum(self._own.get(t, {}).get(i, 0.0) for t in unique),
                "context": w.context * sum(self._context.get(t, {}).get(i, 0.0) for t in unique),
                "group": group_weight.get(group, 0.0) if group is not None else 0.0,
                "vector": vector_scores.get(i, 0.0),
            }
        scored: list[tuple[float, int, dict[str, float]]] = []
        for i, s in raw.items():
            record = self.records[i]
            relevance = (s["keyword"] + s["context"] + s["group"]) / best_keyword + w.vector * max(s["vector"], 0.0)
            speaker = w.speaker if named and record.speaker.lower() in named else 0.0
            age_days = max((moment - record.at).total_seconds() / 86400, 0.0) if record.at else None
            recency = math.exp(-age_days * math.log(2) / w.recency_half_life_days) if age_days is not None else 0.0
            parts = {**s, "relevance": relevance, "speaker": relevance * speaker,
                     "trust": w.trust * (record.trust - 0.5), "recency": w.recency * recency,
                     "cost": -w.cost * record.cost / 1000, "risk": -w.risk * record.risk}
            final = relevance + parts["speaker"] + parts["trust"] + parts["recency"] + parts["cost"] + parts["risk"]
            scored.append((final, i, parts))
        scored.sort(key=lambda item: (-item[0], item[1]))

        hits, duplicates, conflicts, suppressed = self._settle(scored, limit)
        stages: dict[str, Any] = {
            "filters": {**filters.describe(), "kept": sum(allowed), "excluded": excluded},
            "recall": {"terms": terms, "keyword": keyword_candidates,
                       "vector": f"on: {len(vector_scores)}" if self._vectors is not None else self._vector_off},
            "rerank": {"candidates": len(fused), "reranked": len(scored), "weights": {k: getattr(w, k) for k in (
                "context", "group", "speaker", "vector", "trust", "recency", "cost", "risk")},
                "speaker_named": sorted(named)},
            "dedupe": [{"dropped": d, "kept": k} for d, k in duplicates],
        }
        return SearchResult(query=query, hits=tuple(hits), stages=stages, conflicts=tuple(conflicts),
                            suppressed=tuple(suppressed))

    def _settle(self, scored: Sequence[tuple[float, int, dict[str, float]]], limit: int
                ) -> tuple[list[Hit], list[tuple[str, str]], list[Conflict], list[RuleConflict]]:
        """Walk the ranking from the top: drop duplicates of a memory already taken, suppress memories
        contradicting a project rule, and mark memories that disagree with one already taken."""
        taken: list[int] = []
        duplicates: list[tuple[str, str]] = []
        conflicts: list[Conflict] = []
        suppressed: list[RuleConflict] = []
        partners: dict[int, list[str]] = defaultdict(list)
        for _final, i, _parts in scored:
            if len(taken) >= limit:
                break
            mine = self._claims.get(i)
            if mine is not None:
                rule = rule_conflict(mine, self._rules)
                if rule is not None:
                    suppressed.append(RuleConflict(id=self.records[i].id, rule=rule))
                    continue
                twin = next((j for j in taken if j in self._claims and is_duplicate(mine, self._claims[j])), None)
                if twin is not None:
                    duplicates.append((self.records[i].id, self.records[twin].id))
                    continue
                for j in taken:
                    if j in self._claims and disagree(mine, self._claims[j]):
                        ids = (self.records[j].id, self.records[i].id)
                        conflicts.append(Conflict(ids=ids, why=why_they_differ(self._claims[j], mine)))
                        partners[i].append(ids[0])
                        partners[j].append(ids[1])
            taken.append(i)
        by_index = {i: (final, parts) for final, i, parts in scored}
        hits = [Hit(record=self.records[i], score=by_index[i][0], scores=by_index[i][1],
                    conflicts_with=tuple(partners.get(i, ()))) for i in taken]
        return hits, duplicates, conflicts, suppressed


def _rule_lines(rules: Sequence[str]) -> list[str]:
    """Rule texts split into the lines that state something (headings and blanks dropped)."""
    lines: list[str] = []
    for text in rules:
        for line in text.splitlines():
            stripped = line.strip().lstrip("-*>").strip()
            if stripped and not stripped.startswith("#") and len(content_words(stripped)) >= 2:
                lines.append(stripped)
    return lines


