"""Okapi BM25 over an in-memory inverted index: scoring touches only the postings of the query's terms,
so a query costs microseconds per matching document whatever the corpus size."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence

__all__ = ["BM25Index"]


class BM25Index:
    def __init__(self, documents: Sequence[Sequence[str]], *, k1: float = 1.2, b: float = 0.75) -> None:
        self.size = len(documents)
        lengths = [len(d) for d in documents]
        average = (sum(lengths) / len(lengths)) if lengths else 1.0
        average = average or 1.0
        self._postings: dict[str, list[tuple[int, float]]] = defaultdict(list)
        counts = [Counter(d) for d in documents]
        for position, (counted, length) in enumerate(zip(counts, lengths, strict=True)):
            norm = k1 * (1 - b + b * length / average)
            for term, tf in counted.items():
                # The per-document part of the BM25 term weight is fixed at build time.
                self._postings[term].append((position, tf * (k1 + 1) / (tf + norm)))
        self._idf = {term: math.log(1 + (self.size - len(p) + 0.5) / (len(p) + 0.5))
                     for term, p in self._postings.items()}

    def term_weights(self) -> dict[str, dict[int, float]]:
        """Term -> {document position: that term's whole BM25 contribution}, for callers that fuse
        several indexes into one set of postings."""
        return {term: {position: self._idf[term] * weight for position, weight in postings}
                for term, postings in self._postings.items()}

    def scores(self, terms: Iterable[str]) -> dict[int, float]:
        """Document position -> BM25 score, for documents sharing at least one term with the query."""
        out: dict[int, float] = defaultdict(float)
        for term in set(terms):
            idf = self._idf.get(term)
            if idf is None:
                continue
            for position, weight in self._postings[term]:
                out[position] += idf * weight
        return dict(out)
