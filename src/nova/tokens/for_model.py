"""Which counter a model gets: its own tokenizer offline where there is one (OpenAI's), the fitted profile
of its family (Claude as exact cl100k times a scale, Gemini's heuristic), an exact bound for open-weight
BPE families, and otherwise a bound that never counts low.

    counter = counter_for_model("claude-sonnet-4-5")
    counter.count("some text")
"""

from __future__ import annotations

from nova.tokens.counters import (
    CL100K_PROFILE,
    CLAUDE_SCALE,
    CLAUDE_TOOL_USE_OVERHEAD,
    GEMINI_PROFILE,
    O200K_PROFILE,
    HeuristicCounter,
    Overheads,
    ScaledCounter,
    TokenCounter,
    UpperBoundCounter,
    claude_profile,
)
from nova.tokens.local_bound import LocalBpeBound
from nova.tokens.offline_tiktoken import TiktokenCounter, TokenizerUnavailable

__all__ = ["CLAUDE_COUNTER_NAME", "claude_counter", "counter_for_model"]

CLAUDE_COUNTER_NAME = "claude-cl100k-scaled"


def claude_counter(scale: float = 0.0, tool_use: int = -1, *, exact: bool = True) -> TokenCounter:
    """Claude's count: exact cl100k times `scale` (default `CLAUDE_SCALE`), each tool call `tool_use`
    tokens beyond its name and arguments (default `CLAUDE_TOOL_USE_OVERHEAD`); the heuristic profile
    (`claude_profile`) when tiktoken or its encoding is missing, or `exact` is False."""
    scale = scale or CLAUDE_SCALE
    tool_use = CLAUDE_TOOL_USE_OVERHEAD if tool_use < 0 else tool_use
    if exact:
        try:
            return ScaledCounter(TiktokenCounter("cl100k_base"), scale, Overheads(tool_use=tool_use),
                                 name=CLAUDE_COUNTER_NAME)
        except TokenizerUnavailable:
            pass  # the heuristic is within a few per cent of exact cl100k on most text
    return HeuristicCounter(claude_profile(scale, tool_use))


# Open-weight families whose tokenizers are byte-level BPE built like cl100k: counted by
# `nova.tokens.local_bound.LocalBpeBound` (exact cl100k and o200k, not a heuristic), see there.
_LOCAL_BPE_MODELS = (
    "llama3", "llama-3", "llama_3", "qwen2", "qwen-2", "qwen3", "qwen-3", "qwq", "deepseek-v3", "deepseek-r1",
    "deepseek-chat", "deepseek-reasoner", "phi4", "phi-4",
)

_O200K_MODELS = (
    "gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "o1", "o3", "o4", "chatgpt-4o", "gpt-oss", "codex-mini",
)
_CL100K_MODELS = ("gpt-4", "gpt-3.5", "text-embedding-3", "text-embedding-ada")


def counter_for_model(model: str, *, exact: bool = True) -> TokenCounter:
    """A sensible counter for `model`: tiktoken where it is the model's own tokenizer (and `exact`), the
    fitted profile of its family (Gemini, Claude) where there is one, otherwise an upper bound."""
    name = model.lower().rsplit("/", 1)[-1]
    encoding = None
    # A gateway's alias puts its own word before the model's name ("aide-gpt-5", "openai.gpt-5.4").
    bare = [name, *(rest for i, c in enumerate(name) if c in "-_.:" and (rest := name[i + 1:]).startswith("gpt-"))]
    if any(n.startswith(_O200K_MODELS) for n in bare):
        encoding = "o200k_base"
    elif any(n.startswith(_CL100K_MODELS) for n in bare):
        encoding = "cl100k_base"
    if encoding is not None:
        if exact:
            try:
                return TiktokenCounter(encoding)  # type: ignore[arg-type]
            except TokenizerUnavailable:
                pass  # fall back to the estimate rather than fail a turn over a missing file
        return HeuristicCounter(O200K_PROFILE if encoding == "o200k_base" else CL100K_PROFILE)
    if "gemini" in name or "gemma" in name:
        return HeuristicCounter(GEMINI_PROFILE)
    if "claude" in name:  # also "anthropic.claude-…" (Bedrock) and "claude-…@date" (Vertex)
        return claude_counter(exact=exact)
    if name.startswith("nova-demo"):
        # The demo provider reports usage counted with the cl100k profile: its own tokenizer, in effect.
        return HeuristicCounter(CL100K_PROFILE)
    if any(family in name for family in _LOCAL_BPE_MODELS):  # "llama3.1:8b", "Meta-Llama-3.1-8B-Q4.gguf"
        try:
            return LocalBpeBound()
        except TokenizerUnavailable:
            pass  # without the encodings, the general bound below still never counts low
    # Mistral, an older local model, a typo: no profile is known to fit, so never count low.
    return UpperBoundCounter()
