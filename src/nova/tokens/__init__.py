"""Token accounting: counters (script-aware heuristic, exact offline tiktoken) and the usage ledger.

    ledger = TokenLedger(counter_for_model("claude-sonnet-4-5"))
    ledger.record(reply.id, response.usage, sent=request.messages)  # each reply entering history (TOK-2)
    used = ledger.estimate(history, system, tools)    # the one figure every surface shows (TOK-3)
    ledger.clear()                                    # after a successful compaction
"""

from nova.tokens.counters import (
    CL100K_PROFILE,
    CLAUDE_PROFILE,
    GEMINI_PROFILE,
    KNOWN_PROFILES,
    O200K_PROFILE,
    CharRatioCounter,
    HeuristicCounter,
    Overheads,
    TokenCounter,
    TokenProfile,
    UpperBoundCounter,
    counter_for_model,
)
from nova.tokens.ledger import (
    Anchor,
    TokenLedger,
    anchor_from_usage,
    context_percent,
    estimate_context_tokens,
)
from nova.tokens.memo import MemoCounter, MessageTotals
from nova.tokens.offline_tiktoken import TiktokenCounter, TokenizerUnavailable
from nova.tokens.sizing import count_message, count_messages, count_system, count_tools

__all__ = [
    "CL100K_PROFILE",
    "CLAUDE_PROFILE",
    "GEMINI_PROFILE",
    "KNOWN_PROFILES",
    "O200K_PROFILE",
    "Anchor",
    "CharRatioCounter",
    "HeuristicCounter",
    "MemoCounter",
    "MessageTotals",
    "Overheads",
    "TiktokenCounter",
    "TokenCounter",
    "TokenLedger",
    "TokenProfile",
    "TokenizerUnavailable",
    "UpperBoundCounter",
    "anchor_from_usage",
    "context_percent",
    "count_message",
    "count_messages",
    "count_system",
    "count_tools",
    "counter_for_model",
    "estimate_context_tokens",
]
