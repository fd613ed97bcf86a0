"""`nova memory search "…"`: run the retrieval pipeline over the memory store and show every stage —
which filters removed what, which recalls found candidates, the rerank scores, duplicates, conflicts and
memories suppressed by a project rule. Nothing is logged: this is an inspection tool."""

# No `from __future__ import annotations`: typer reads the signature at run time.
import json
import os
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from nova.cli.commands.errors import user_errors
from nova.cli.commands.global_options import global_overrides
from nova.memory.config import parse_memory_config
from nova.memory.instructions import load_rules, parse_instructions_config
from nova.memory.retrieval.embed import load_encoder, unavailable_reason
from nova.memory.retrieval.memories import search_memories
from nova.memory.store import MemoryStore
from nova.present.terminal import terminal_console
from nova.present.text import terminal_safe
from nova.settings import load_settings

__all__ = ["search_command"]

console = terminal_console(highlight=False)


def search_command(
    query: Annotated[str, typer.Argument(help="What to look for.")],
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="How many hits to show.")] = 10,
    candidates: Annotated[bool, typer.Option("--candidates", help="Also rank memories awaiting review.")] = False,
    vectors: Annotated[bool, typer.Option("--vectors", help="Add MiniLM vector recall (needs the embeddings "
                                                            "extra; encodes every memory, so it is slower).")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the stages and hits as one JSON object.")] = False,
) -> None:
    """Search memories with the retrieval pipeline and show each stage: filters, keyword and vector
    recall, rerank scores, duplicates, conflicts and rule suppressions."""
    with user_errors():
        settings = load_settings(env=dict(os.environ), overrides=global_overrides())
        config = parse_memory_config(settings.section("memory"), source=f"{settings.config_file} [memory]")
        store = MemoryStore.for_workspace(home=settings.home, cwd=Path.cwd(), index_max_lines=config.index_max_lines,
                                          index_max_bytes=config.index_max_bytes)
        instructions = parse_instructions_config(settings.section("instructions"),
                                                 source=f"{settings.config_file} [instructions]")
        rules = load_rules(cwd=Path.cwd(), home=settings.home, config=instructions).text
        encoder = load_encoder() if vectors else None
        if vectors and encoder is None:
            console.print(f"nova: vector recall is off: {unavailable_reason()}", markup=False, soft_wrap=True)
        result = search_memories(query, store.memories(include_revoked=True), rules=(rules,) if rules else (),
                                 limit=limit, include_candidates=candidates, encoder=encoder)
    if as_json:
        typer.echo(terminal_safe(json.dumps(result.to_json(), ensure_ascii=False, indent=2, default=str), json=True))
        return
    stages = result.stages
    kept = stages["filters"]["kept"]
    excluded = ", ".join(f"{reason}: {n}" for reason, n in sorted(stages["filters"]["excluded"].items())) or "none"
    console.print(f"filters: {kept} memories kept; excluded {excluded}", markup=False, soft_wrap=True)
    recall = stages["recall"]
    console.print(f"recall: terms {' '.join(recall['terms']) or '(none)'}; keyword {recall['keyword']} "
                  f"candidates, vector {recall['vector']}", markup=False, soft_wrap=True)
    console.print(f"rerank: {stages['rerank']['candidates']} candidates, best {stages['rerank']['reranked']} "
                  "scored on relevance, trust, recency, cost and risk", markup=False, soft_wrap=True)
    if not result.hits:
        console.print("no memory to show", markup=False)
    else:
        table = Table("#")
        table.add_column("memory", overflow="fold")  # the id `nova memory show` takes, never cut
        for column in ("score", "relevance", "trust", "recency", "cost", "risk"):
            table.add_column(column)
        for rank, hit in enumerate(result.hits, 1):
            s = hit.scores
            name = hit.record.id + (" (conflict)" if hit.conflicts_with else "")
            table.add_row(str(rank), escape(name), f"{hit.score:.3f}", f"{s['relevance']:.3f}", f"{s['trust']:+.3f}",
                          f"{s['recency']:+.3f}", f"{s['cost']:+.3f}", f"{s['risk']:+.3f}")
        console.print(table)
        for rank, hit in enumerate(result.hits, 1):
            console.print(f"{rank}. {hit.record.source}", markup=False, soft_wrap=True)
    for dropped in stages["dedupe"]:
        console.print(f"duplicate: {dropped['dropped']} repeats {dropped['kept']}", markup=False, soft_wrap=True)
    for conflict in result.conflicts:
        console.print(f"conflict: {conflict.ids[0]} and {conflict.ids[1]} disagree ({conflict.why}); both shown",
                      markup=False, soft_wrap=True)
    for gone in result.suppressed:
        console.print(f"suppressed: {gone.id} contradicts the project rule {gone.rule!r}", markup=False, soft_wrap=True)
