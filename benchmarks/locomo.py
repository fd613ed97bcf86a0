"""LoCoMo retrieval benchmark: Nova's multi-stage retrieval against plain BM25 and plain dense retrieval.

    python benchmarks/locomo.py [--no-dense]

Data: `locomo/locomo10.json` of the shared data (NOVA_SHARED_DATA): 10 long two-person conversations.
Every turn becomes a session record (speaker, text, the caption of a shared photo, the session's date),
each conversation a project of its own; every question of categories 1-4 whose evidence turns exist is
asked with the project filter of its conversation. Metric: turn-level evidence recall@k, the share of a
question's evidence turns among the k retrieved, averaged over questions.

Baselines, in the same run on the same records: plain BM25 over each turn's words, and plain dense
retrieval (cosine of all-MiniLM-L6-v2 vectors of each turn; skipped, and said so, when the optional
embeddings extra is not installed).

Nova's weights were tuned on conversations 1-5; conversations 6-10 are held out and reported apart.
Nova runs here on keywords with its rerank: vector recall is off because encoding every turn with MiniLM
on a small CPU takes longer than the index budget (the dense baseline's encode time is printed). A
`nova+vec` row shows, for information, Nova with vector recall on over the dense baseline's vectors.

Targets: Nova's recall@10 >= 0.70 and recall@5 >= 0.60, each above every baseline; query p95 < 20 ms;
index build < 60 s. Last line: one JSON object with recall_at_5, recall_at_10, bm25_recall_at_10,
dense_recall_at_10, query_p95_ms, index_s.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from nova.memory.retrieval.embed import load_encoder, model_dir, unavailable_reason
from nova.memory.retrieval.filters import HardFilters
from nova.memory.retrieval.keyword import BM25Index
from nova.memory.retrieval.pipeline import RetrievalIndex
from nova.memory.retrieval.records import Record
from nova.memory.retrieval.text import tokenize
from nova.testing import shared_data_dir

TUNED = 5  # conversations 1..TUNED were used to choose the weights; the rest are held out
_DATE = re.compile(r"(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+(\w+),?\s+(\d{4})", re.IGNORECASE)
_MONTHS = {m: i for i, m in enumerate(
    ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"], 1)}


@dataclass(frozen=True, slots=True)
class Question:
    conversation: int
    text: str
    evidence: frozenset[str]


def session_time(label: str) -> datetime | None:
    match = _DATE.search(label)
    if not match:
        return None
    hour, minute, half, day, month, year = match.groups()
    clock = int(hour) % 12 + (12 if half.lower() == "pm" else 0)
    number = _MONTHS.get(month.lower())
    if number is None:
        return None
    return datetime(int(year), number, int(day), clock, int(minute), tzinfo=UTC)


def load(path: Path) -> tuple[list[list[Record]], list[Question]]:
    samples = json.loads(path.read_text(encoding="utf-8"))
    conversations: list[list[Record]] = []
    questions: list[Question] = []
    for number, sample in enumerate(samples):
        project = str(sample["sample_id"])
        talk = sample["conversation"]
        records: list[Record] = []
        session = 1
        while f"session_{session}" in talk:
            label = str(talk.get(f"session_{session}_date_time", ""))
            moment = session_time(label)
            for position, turn in enumerate(talk[f"session_{session}"]):
                text = str(turn["text"])
                if turn.get("blip_caption"):
                    text += f" [shared a photo: {turn['blip_caption']}]"
                records.append(Record(
                    id=f"{project}:{turn['dia_id']}", text=text, kind="session", type="turn", project=project,
                    at=moment, source=f"{project} session {session}", group=f"{project}:{session}",
                    position=position, speaker=str(turn["speaker"]), date_label=label.split(" on ")[-1],
                    cost=len(text) // 4))
            session += 1
        known = {r.id for r in records}
        for qa in sample["qa"]:
            if qa.get("category") not in (1, 2, 3, 4):
                continue
            evidence = frozenset(f"{project}:{e}" for e in qa.get("evidence", []) if f"{project}:{e}" in known)
            if evidence:  # a few questions cite turns that do not exist; they cannot be scored
                questions.append(Question(conversation=number, text=str(qa["question"]), evidence=evidence))
        conversations.append(records)
    return conversations, questions


Ranker = Callable[[int, str], list[str]]


def recall_at(ranked: Sequence[str], evidence: frozenset[str], k: int) -> float:
    return len(evidence & set(ranked[:k])) / len(evidence)


def score(rank: Ranker, questions: Sequence[Question], subset: Callable[[int], bool]) -> tuple[float, float, int]:
    chosen = [q for q in questions if subset(q.conversation)]
    at5 = at10 = 0.0
    for q in chosen:
        ranked = rank(q.conversation, q.text)
        at5 += recall_at(ranked, q.evidence, 5)
        at10 += recall_at(ranked, q.evidence, 10)
    n = len(chosen) or 1
    return at5 / n, at10 / n, len(chosen)


def plain_bm25(conversations: Sequence[list[Record]]) -> Ranker:
    indexes = [BM25Index([tokenize(r.text) for r in records]) for records in conversations]

    def rank(conversation: int, query: str) -> list[str]:
        found = indexes[conversation].scores(tokenize(query))
        best = sorted(found, key=lambda i: (-found[i], i))[:10]
        return [conversations[conversation][i].id for i in best]

    return rank


@dataclass(frozen=True, slots=True)
class Dense:
    rank: Ranker
    vectors: list[Any]
    encode_s: float
    cached: bool


def plain_dense(conversations: Sequence[list[Record]], *, fresh: bool) -> Dense | None:
    """Cosine ranking over MiniLM vectors of each turn's text. Encoding ~6,000 turns is minutes of CPU
    on a small shared machine, so the vectors are kept in the temp directory, keyed by the model and
    the texts (`--fresh` encodes again); the time printed is always that of a real encode."""
    import numpy as np

    encoder = load_encoder()
    folder = model_dir()
    if encoder is None or folder is None:
        return None
    texts = [[r.text for r in records] for records in conversations]
    key = hashlib.sha256(json.dumps([str(folder), (folder / "model.safetensors").stat().st_size, texts]).encode())
    cache = Path(tempfile.gettempdir()) / f"nova-locomo-dense-{key.hexdigest()[:16]}.npz"
    cached = cache.is_file() and not fresh
    if cached:
        with np.load(cache) as stored:
            vectors = [stored[f"c{i}"] for i in range(len(texts))]
            took = float(stored["encode_s"])
    else:
        start = time.perf_counter()
        vectors = [encoder.encode(chunk) for chunk in texts]
        took = time.perf_counter() - start
        np.savez(cache, encode_s=took, **{f"c{i}": v for i, v in enumerate(vectors)})

    def rank(conversation: int, query: str) -> list[str]:
        cosines = vectors[conversation] @ encoder.encode([query])[0]
        return [conversations[conversation][int(i)].id for i in cosines.argsort()[::-1][:10]]

    return Dense(rank=rank, vectors=vectors, encode_s=took, cached=cached)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-dense", action="store_true", help="skip the dense baseline (it encodes every turn)")
    parser.add_argument("--fresh", action="store_true", help="encode the dense baseline again, ignoring its cache")
    args = parser.parse_args(argv)
    path = shared_data_dir() / "locomo" / "locomo10.json"
    if not path.is_file():
        print(f"no LoCoMo data at {path}; set NOVA_SHARED_DATA", file=sys.stderr)
        return 2
    conversations, questions = load(path)
    turns = sum(len(c) for c in conversations)
    print(f"LoCoMo: {len(conversations)} conversations, {turns} turns, {len(questions)} questions (categories 1-4)")

    start = time.perf_counter()
    indexes = [RetrievalIndex(records) for records in conversations]
    index_s = time.perf_counter() - start
    projects = [records[0].project for records in conversations]
    filters = [HardFilters(project=p, states=frozenset({"active"})) for p in projects]

    def nova(conversation: int, query: str) -> list[str]:
        result = indexes[conversation].search(query, filters=filters[conversation], limit=10)
        return [h.record.id for h in result.hits]

    # Query latency: each question's best wall time over three passes (the machine is shared, and the
    # best pass leaves out moments this process was waiting for a core), with its CPU time beside it.
    latencies: list[float] = []
    cpu_times: list[float] = []
    for q in questions:
        best_wall = best_cpu = float("inf")
        for _ in range(3):
            wall, cpu = time.perf_counter(), time.thread_time()
            nova(q.conversation, q.text)
            best_wall = min(best_wall, time.perf_counter() - wall)
            best_cpu = min(best_cpu, time.thread_time() - cpu)
        latencies.append(best_wall)
        cpu_times.append(best_cpu)

    rankers: dict[str, Ranker] = {"nova": nova, "bm25": plain_bm25(conversations)}
    dense_note = ""
    if args.no_dense:
        dense_note = "skipped (--no-dense)"
    else:
        dense = plain_dense(conversations, fresh=args.fresh)
        if dense is None:
            dense_note = f"skipped: {unavailable_reason()}"
        else:
            rankers["dense"] = dense.rank
            dense_note = (f"encoding all turns takes {dense.encode_s:.1f}s ({dense.encode_s / max(index_s, 1e-9):.0f}x "
                          f"Nova's index){'; vectors from the cache of that run' if dense.cached else ''}")
            # For information only: Nova with vector recall on, reusing those vectors. Its index would
            # cost the encode time above, over the 60 s budget, so it is not the pipeline measured.
            with_vectors = [RetrievalIndex(records, encoder=load_encoder(), vectors=vectors)
                            for records, vectors in zip(conversations, dense.vectors, strict=True)]

            def nova_vectors(conversation: int, query: str) -> list[str]:
                found = with_vectors[conversation].search(query, filters=filters[conversation], limit=10)
                return [h.record.id for h in found.hits]

            rankers["nova+vec"] = nova_vectors

    subsets: dict[str, Callable[[int], bool]] = {
        f"tuned 1-{TUNED}": lambda c: c < TUNED,
        f"held-out {TUNED + 1}-10": lambda c: c >= TUNED,
        "all 10": lambda c: True,
    }
    results: dict[str, dict[str, tuple[float, float, int]]] = {}
    for name, rank in rankers.items():
        results[name] = {label: score(rank, questions, keep) for label, keep in subsets.items()}

    header = f"{'retriever':<10}" + "".join(f"{label + ' r@5':>18}{'r@10':>7}" for label in subsets)
    print(header)
    for name, by_subset in results.items():
        print(f"{name:<10}" + "".join(f"{r5:>18.3f}{r10:>7.3f}" for r5, r10, _ in by_subset.values()))
    counts = ", ".join(f"{label}: {n}" for label, (_, _, n) in results["nova"].items())
    print(f"questions per subset: {counts}")
    if dense_note:
        print(f"dense baseline: {dense_note}")
    p95 = statistics.quantiles(latencies, n=20)[18] * 1000 if len(latencies) >= 20 else 0.0
    cpu_p95 = statistics.quantiles(cpu_times, n=20)[18] * 1000 if len(cpu_times) >= 20 else 0.0
    print(f"Nova index build {index_s:.2f}s for {turns} records; query p95 {p95:.2f} ms wall (best of 3), "
          f"{cpu_p95:.2f} ms CPU, over {len(latencies)} questions")

    everything = "all 10"
    nova5, nova10, _ = results["nova"][everything]
    held5, held10, _ = results["nova"][f"held-out {TUNED + 1}-10"]
    bm25_10 = results["bm25"][everything][1]
    dense_10 = results["dense"][everything][1] if "dense" in results else None
    checks: list[tuple[str, bool]] = [
        ("recall@10 >= 0.70 (all 10)", nova10 >= 0.70),
        ("recall@5 >= 0.60 (all 10)", nova5 >= 0.60),
        ("recall@10 >= 0.70 (held-out)", held10 >= 0.70),
        ("recall@5 >= 0.60 (held-out)", held5 >= 0.60),
        ("query p95 < 20 ms", p95 < 20.0),
        ("index build < 60 s", index_s < 60.0),
    ]
    for name, by_subset in results.items():
        if name in ("bm25", "dense"):
            base5, base10, _ = by_subset[everything]
            checks.append((f"above {name} at @5 and @10", nova5 > base5 and nova10 > base10))
    missed = [label for label, ok in checks if not ok]
    for label, ok in checks:
        print(f"  {'ok  ' if ok else 'MISS'} {label}")
    summary: dict[str, Any] = {
        "recall_at_5": round(nova5, 4), "recall_at_10": round(nova10, 4),
        "bm25_recall_at_10": round(bm25_10, 4),
        "dense_recall_at_10": round(dense_10, 4) if dense_10 is not None else None,
        "query_p95_ms": round(p95, 3), "index_s": round(index_s, 3),
    }
    print(json.dumps(summary))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
