"""Each instruction file's tokens as the context manifest counts them: one figure for `nova rules` and
`nova context` (and the TUI's and the API's `/context`, which read the same manifest).

The manifest counts the system block with the model's counter and splits that count over the head's
pieces (the contract, org policy, one piece per instruction file with its "Contents of …" heading) in
proportion to each piece's own count. `rules_tokens` compiles the same head through the same compiler,
with nothing else in the view, and reads the `rules:<path>` segments back: a session's manifest shows
the same figure for each file until a real usage figure from the provider calibrates its whole view.
"""

from __future__ import annotations

from pathlib import Path

from nova.agent.context_runtime import build_context_sources
from nova.context.budget import budget_for
from nova.context.compiler import CompileInput, compile
from nova.settings import Settings
from nova.tokens import TokenLedger, counter_for_model

__all__ = ["RULES_SEGMENT_PREFIX", "rules_tokens"]

RULES_SEGMENT_PREFIX = "rules:"


def rules_tokens(*, settings: Settings, cwd: Path, contract: str) -> dict[Path, int]:
    """Tokens of each loaded instruction file's manifest segment, by the file's path."""
    sources = build_context_sources(settings=settings, cwd=cwd, contract=contract)
    budget = budget_for(settings)
    compiled = compile(CompileInput(head=sources.head, tools=(), history=(), policy=sources.policy,
                                    limit=budget.threshold, window=budget.window,
                                    ledger=TokenLedger(counter_for_model(settings.model))))
    return {Path(s.id.removeprefix(RULES_SEGMENT_PREFIX)): s.tokens for s in compiled.manifest.segments
            if s.id.startswith(RULES_SEGMENT_PREFIX)}
