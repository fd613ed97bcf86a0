"""An upper bound for open-weight models whose tokenizers are byte-level BPE built like cl100k.

Llama 3, Qwen 2/2.5/3, DeepSeek V3/R1 and Phi-4 split text before merging the way cl100k does (words,
punctuation runs, spaces, digits) and have 100k-151k tokens: Llama 3 is cl100k's 100k tokens plus 28k
more (so it needs at most about cl100k's count), Phi-4 uses cl100k itself, Qwen and DeepSeek split
numbers into single digits where cl100k takes up to three digits a token. None of their tokenizers is
installed here to measure, so the bound is built from what can be counted exactly: the larger of the
exact cl100k and o200k counts, plus what splitting every digit on its own can add (a run of n digits is
at least n/3 cl100k tokens and at most n Qwen tokens, so at most 2n/3 more), plus 5 % for vocabulary
differences nobody here can measure.

The general `UpperBoundCounter` has to hold for Claude's tokenizer too and runs at 1.47x exact cl100k
(median 20-line sample of the mini-swe-agent trajectories); this one at 1.08x (1.05x at the 5th
percentile, 1.24x at the 95th), so a model on llama.cpp or Ollama at 8k compacts near its real budget
instead of at two thirds of it. A heuristic profile times a margin cannot stand in for the exact counts
here: the cl100k profile runs up to 25 % under exact cl100k on short command outputs, and the larger of
the cl100k and o200k profiles x1.1 fell below the exact count on 733 of those 3,317 messages.
"""

from __future__ import annotations

import math

from nova.tokens.counters import CL100K_PROFILE, O200K_PROFILE, Overheads
from nova.tokens.offline_tiktoken import TiktokenCounter

__all__ = ["LocalBpeBound"]

_VOCABULARY_MARGIN = 1.05


def _margin(value: int) -> int:
    return math.ceil(value * _VOCABULARY_MARGIN)


class LocalBpeBound:
    """max(exact cl100k, exact o200k) x 1.05 plus 2/3 of a token per ASCII digit. Raises
    `TokenizerUnavailable` when the offline encodings are missing (the caller falls back)."""

    def __init__(self) -> None:
        self._encodings = (TiktokenCounter("cl100k_base"), TiktokenCounter("o200k_base"))
        # Chat templates of these families wrap a message in ~5 tokens (<|im_start|>role\n … <|im_end|>\n,
        # Llama 3's header and <|eot_id|>), a tool call in ~10 (<tool_call>{"name":…,"arguments":…}).
        largest = {
            field: max(int(getattr(p.overheads, field)) for p in (CL100K_PROFILE, O200K_PROFILE))
            for field in ("message", "tool_use", "tool_result", "tool_spec")
        }
        self.overheads = Overheads(**{field: _margin(value) + 1 for field, value in largest.items()})

    def count(self, text: str) -> int:
        if not text:
            return 0
        exact = max(encoding.count(text) for encoding in self._encodings)
        digits = sum(1 for char in text if "0" <= char <= "9")
        return math.ceil(exact * _VOCABULARY_MARGIN + digits * 2 / 3)

    def __repr__(self) -> str:
        return "LocalBpeBound(cl100k/o200k exact x1.05 + digits)"
