"""Overflow recovery (CMP-9): the provider's "prompt is too long" is authoritative.

Estimates can be low (a tokenizer we only approximate, images, provider-side wrappers). When the provider
still rejects a request as too large, one compaction is forced that ignores the estimate and the turn is
replayed; at most once per user request (the agent loop keeps that flag per turn). A second rejection
means the fixed part of the prompt (system prompt and tool schemas) is itself too large, and retrying
cannot help: it surfaces as an error that says so.

Only `ContextOverflow` qualifies. Rate limits (429, including "request too large … per minute"), quota
and overload (529/503) are different classes in `nova.errors` and are never treated as overflow: shrinking
history would not help them and would throw away context for nothing.
"""

from __future__ import annotations

from nova.errors import ContextOverflow, Overloaded, QuotaExceeded, RateLimited

__all__ = ["is_context_overflow", "second_overflow_message"]


def is_context_overflow(exc: BaseException) -> bool:
    """True only for a real context overflow; never for rate-limit, quota or overloaded errors."""
    if isinstance(exc, RateLimited | QuotaExceeded | Overloaded):
        return False
    return isinstance(exc, ContextOverflow)


def second_overflow_message(exc: BaseException, *, fixed_tokens: int | None = None, window: int | None = None) -> str:
    """The error text shown when a request is rejected again after the forced compaction."""
    detail = ""
    if fixed_tokens is not None and window is not None:
        detail = f" The system prompt and tool schemas alone take about {fixed_tokens:,} of {window:,} tokens."
    return (
        f"The model rejected the request as too large even after compacting the conversation ({exc})."
        + detail
        + " Reduce the system prompt, instruction files or the number of tools, or use a model with a larger "
        "context window."
    )
