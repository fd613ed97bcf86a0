"""Model table: context window, prices and the minimum cacheable prefix for the common models.

Prices are USD per million tokens. `cache_write_5m` / `cache_write_1h` apply to Anthropic's cache
writes; OpenAI bills cache reads only (writes cost the plain input price). A model id matches an
entry exactly or with a date or tag suffix ("claude-sonnet-4-5-20250929", "gpt-4o-2024-08-06",
"llama3:8b"); anything else is unknown, and its cost is reported as unknown rather than guessed.

The table holds no output ceiling: the answer's size is Nova's own `max_output_tokens` (8192 unless
configured, under every model listed), which fits the context budget's output reserve. A model's ceiling
(32k-128k) as the default would not: the view plus the answer could then exceed the window, which
newer providers refuse instead of trimming.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from nova.model import Usage

__all__ = ["ModelInfo", "context_window_for", "cost_usd", "model_info", "usage_cost"]


@dataclass(frozen=True, slots=True)
class ModelInfo:
    name: str
    window: int
    input: float
    output: float
    cache_read: float
    cache_write_5m: float
    cache_write_1h: float
    min_cacheable_tokens: int = 1024
    # The largest window the provider accepts when asked for it (Claude's 1M context): a recording whose
    # real requests went past `window` ran with this one.
    max_window: int = 0
    # Long-context pricing: a request whose prompt is over `long_from` tokens bills every token at `long`'s
    # rates (GPT-5.4 and later over 272k, Claude Haiku 5.5 over 100k).
    long_from: int = 0
    long: ModelInfo | None = None


def _anthropic(name: str, window: int, inp: float, out: float, min_cache: int, *, max_window: int = 0,
               long_from: int = 0, long_factor: float = 1.0) -> ModelInfo:
    # Anthropic's cache multipliers: write 5 min 1.25x, write 1 h 2x, read 0.1x of the input price.
    long = _anthropic(name, window, inp * long_factor, out * long_factor, min_cache) if long_from else None
    return ModelInfo(name, window, inp, out, inp * 0.1, inp * 1.25, inp * 2.0, min_cache,
                     max_window=max_window, long_from=long_from, long=long)


def _openai(name: str, window: int, inp: float, out: float, cached: float, *, long_from: int = 0,
            long_input: float = 2.0, long_output: float = 1.5) -> ModelInfo:
    # OpenAI's long-context rates: above `long_from` the whole request bills at 2x input (cached input
    # too) and 1.5x output.
    long = _openai(name, window, inp * long_input, out * long_output, cached * long_input) if long_from else None
    return ModelInfo(name, window, inp, out, cached, inp, inp, 1024, long_from=long_from, long=long)


# Claude Code runs every Claude model at 200k unless asked for the 1M window; the API has it generally
# available from Opus 4.6 and Sonnet 4.6 on.
_CLAUDE_1M = 1_000_000


_MODELS: tuple[ModelInfo, ...] = (
    # Claude Opus 4.7 and later, Sonnet 5 and later, Haiku 5.5 (genai-prices 0.2.3, from
    # https://platform.claude.com/docs/en/about-claude/pricing): flat prices across the 1M window except
    # Haiku 5.5, whose prompts over 100k tokens bill every token at 5x. Minimum cacheable prefixes from
    # the prompt-caching page's table: 4,096 for Opus 4.7, 1,024 for Opus 4.8.
    _anthropic("claude-opus-5-5", 200_000, 4.0, 20.0, 1024, max_window=_CLAUDE_1M),
    _anthropic("claude-opus-5", 200_000, 5.0, 25.0, 1024, max_window=_CLAUDE_1M),
    _anthropic("claude-opus-4-8", 200_000, 5.0, 25.0, 1024, max_window=_CLAUDE_1M),
    _anthropic("claude-opus-4-7", 200_000, 5.0, 25.0, 4096, max_window=_CLAUDE_1M),
    _anthropic("claude-sonnet-5-5", 200_000, 2.0, 10.0, 1024, max_window=_CLAUDE_1M),
    _anthropic("claude-sonnet-5", 200_000, 2.0, 10.0, 1024, max_window=_CLAUDE_1M),
    _anthropic("claude-haiku-5-5", 200_000, 0.1, 0.5, 1024, max_window=_CLAUDE_1M, long_from=100_000,
               long_factor=5.0),
    # Opus 4.6 and Sonnet 4.6 bill a prompt over 200k tokens at 2x input (genai-prices 0.2.3).
    _anthropic("claude-opus-4-6", 200_000, 5.0, 25.0, 4096, max_window=_CLAUDE_1M, long_from=200_000,
               long_factor=2.0),
    _anthropic("claude-opus-4-5", 200_000, 5.0, 25.0, 4096),
    _anthropic("claude-opus-4-1", 200_000, 15.0, 75.0, 1024),
    _anthropic("claude-opus-4", 200_000, 15.0, 75.0, 1024),
    _anthropic("claude-sonnet-4-6", 200_000, 3.0, 15.0, 2048, max_window=_CLAUDE_1M, long_from=200_000,
               long_factor=2.0),
    _anthropic("claude-sonnet-4-5", 200_000, 3.0, 15.0, 1024),
    _anthropic("claude-sonnet-4", 200_000, 3.0, 15.0, 1024),
    _anthropic("claude-3-7-sonnet", 200_000, 3.0, 15.0, 1024),
    _anthropic("claude-haiku-4-5", 200_000, 1.0, 5.0, 4096),
    _anthropic("claude-3-5-haiku", 200_000, 0.8, 4.0, 2048),
    # GPT-5.4 to 5.6 (genai-prices 0.2.3, from https://developers.openai.com/api/docs/pricing): above 272k
    # prompt tokens (200k for 5.6 Luna) the whole request bills at 2x input and 1.5x output. GPT-5.6 Sol
    # and Terra bill cache writes at 1.25x input.
    ModelInfo("gpt-5.6-sol", 400_000, 4.0, 20.0, 0.40, 5.0, 5.0, 1024, long_from=272_000,
              long=ModelInfo("gpt-5.6-sol", 400_000, 8.0, 30.0, 0.80, 10.0, 10.0, 1024)),
    ModelInfo("gpt-5.6-terra", 400_000, 2.0, 12.0, 0.20, 2.5, 2.5, 1024, long_from=272_000,
              long=ModelInfo("gpt-5.6-terra", 400_000, 4.0, 18.0, 0.40, 5.0, 5.0, 1024)),
    ModelInfo("gpt-5.6-luna", 328_000, 0.2, 1.2, 0.02, 0.25, 0.25, 1024, long_from=200_000,
              long=ModelInfo("gpt-5.6-luna", 328_000, 0.4, 1.8, 0.04, 0.5, 0.5, 1024)),
    _openai("gpt-5.5", 1_000_000, 5.0, 30.0, 0.50, long_from=272_000),
    _openai("gpt-5.4-mini", 400_000, 0.75, 4.5, 0.075),
    _openai("gpt-5.4-nano", 400_000, 0.20, 1.25, 0.02),
    _openai("gpt-5.4", 400_000, 2.5, 15.0, 0.25, long_from=272_000),
    # GPT-5.3-Codex (genai-prices 0.2.3): the 5.2 prices and window.
    _openai("gpt-5.3-codex", 400_000, 1.75, 14.0, 0.175),
    _openai("gpt-5.2-codex", 400_000, 1.75, 14.0, 0.175),
    _openai("gpt-5.2", 400_000, 1.75, 14.0, 0.175),
    _openai("gpt-5.1-codex-mini", 400_000, 0.25, 2.0, 0.025),
    _openai("gpt-5.1-codex", 400_000, 1.25, 10.0, 0.125),
    _openai("gpt-5.1", 400_000, 1.25, 10.0, 0.125),
    _openai("gpt-5-codex", 400_000, 1.25, 10.0, 0.125),
    _openai("gpt-5-nano", 400_000, 0.05, 0.40, 0.005),
    _openai("gpt-5-mini", 400_000, 0.25, 2.0, 0.025),
    _openai("gpt-5", 400_000, 1.25, 10.0, 0.125),
    _openai("gpt-4.1-nano", 1_047_576, 0.10, 0.40, 0.025),
    _openai("gpt-4.1-mini", 1_047_576, 0.40, 1.60, 0.10),
    _openai("gpt-4.1", 1_047_576, 2.0, 8.0, 0.50),
    _openai("gpt-4o-mini", 128_000, 0.15, 0.60, 0.075),
    _openai("gpt-4o", 128_000, 2.50, 10.0, 1.25),
    _openai("o4-mini", 200_000, 1.10, 4.40, 0.275),
    _openai("o3", 200_000, 2.0, 8.0, 0.50),
    # Gemini bills implicit cache hits at a tenth of the input price and nothing for writing (the
    # prices of prompts up to 200k tokens; the storage fee of explicit caches does not apply).
    # Gemini 3 Pro Image (genai-prices 0.2.3, from https://ai.google.dev/gemini-api/docs/pricing): $2 in,
    # $12 text and thinking out ($120 for image output, which a usage record does not tell apart); no
    # cache discount is listed, so a cached token costs the input price. Its window is 65,536 input
    # tokens (https://ai.google.dev/gemini-api/docs/models). "-preview" names strip to this entry.
    _openai("gemini-3-pro-image", 65_536, 2.0, 12.0, 2.0),
    _openai("gemini-3-pro-preview", 1_048_576, 2.0, 12.0, 0.20),
    _openai("gemini-3-pro", 1_048_576, 2.0, 12.0, 0.20),
    # Gemini 3.1 Pro Preview and Gemini 3 Flash Preview (https://ai.google.dev/gemini-api/docs/pricing, as
    # genai-prices 0.2.3 lists them): $2 in, $12 out, $0.20 cached; $0.50 in, $3 out, $0.05 cached. Both
    # take 1,048,576 input tokens (Google's model pages). 3.1 Pro's "-customtools" endpoint is the same
    # model (its model page lists it as a version of it): the suffix strips to this entry.
    _openai("gemini-3.1-pro-preview", 1_048_576, 2.0, 12.0, 0.20),
    _openai("gemini-3-flash-preview", 1_048_576, 0.50, 3.0, 0.05),
    # Gemini 3.1 Flash-Lite, 3.5 Flash and 3.5 Flash-Lite (genai-prices 0.2.3, with their windows).
    _openai("gemini-3.5-flash-lite", 1_000_000, 0.30, 2.5, 0.03),
    _openai("gemini-3.5-flash", 264_000, 1.50, 9.0, 0.15),
    _openai("gemini-3.1-flash-lite", 1_000_000, 0.25, 1.5, 0.025),
    _openai("gemini-2.5-pro", 1_048_576, 1.25, 10.0, 0.125),
    _openai("gemini-2.5-flash-lite", 1_048_576, 0.10, 0.40, 0.01),
    _openai("gemini-2.5-flash", 1_048_576, 0.30, 2.50, 0.03),
    ModelInfo("nova-demo", 32_000, 0.0, 0.0, 0.0, 0.0, 0.0, 1024),
)
_BY_NAME = {m.name: m for m in _MODELS}
# A dated snapshot, a tag or an endpoint variant of the same model: "-20250929", "-2024-08-06",
# "-latest", ":8b", "@20250929", Gemini's "-customtools", a gateway's "-thinking" (the same model with
# extended thinking on, billed as output).
_SUFFIX = re.compile(r"(?:-\d{8}|-\d{4}-\d{2}-\d{2}|-latest|-preview|-customtools|-thinking|-v\d+|[:@].*)$")
# Bedrock names a model "<region>.anthropic.<model>-v1:0" (or "anthropic.<model>-v1:0"); Vertex AI
# "<model>@<date>" (a tag, above). The provider part is not the model.
_VERSION_DOT = re.compile(r"(?<=\d)\.(?=\d)")
_VERSION_FIRST = re.compile(r"^claude-(?P<version>(?P<major>\d)(?:-\d)?)-(?P<family>opus|sonnet|haiku)(?=$|-)")
_PROVIDER_PREFIX = re.compile(r"^(?:(?:us|eu|jp|apac|au|ca|global|us-gov)\.)?(?:anthropic|openai|google)\.")


def model_info(model: str) -> ModelInfo | None:
    """The table entry for `model` (provider prefixes like "openai/", Bedrock's "us.anthropic." and its
    "-v1:0" ignored), or None when unknown."""
    name = _claude_canonical(_PROVIDER_PREFIX.sub("", model.rsplit("/", 1)[-1].lower()))
    while name:
        if name in _BY_NAME:
            return _BY_NAME[name]
        stripped = _SUFFIX.sub("", name)
        if stripped == name:
            return None
        name = stripped
    return None


def _claude_canonical(name: str) -> str:
    """Anthropic's own spelling of a Claude name that a gateway or an agent's config wrote otherwise:
    OpenRouter's "claude-sonnet-4.5", "claude_4_5_opus", "claude-4-sonnet" (the family before the version
    from Claude 4 on; "claude-3-7-sonnet" is Anthropic's own order for 3.x)."""
    if not name.startswith("claude"):
        return name
    name = _VERSION_DOT.sub("-", name.replace("_", "-"))
    swapped = _VERSION_FIRST.match(name)
    if swapped and int(swapped["major"]) >= 4:
        name = f"claude-{swapped['family']}-{swapped['version']}{name[swapped.end():]}"
    return name


def context_window_for(model: str) -> int | None:
    info = model_info(model)
    return info.window if info else None


def cost_usd(usage: Usage, model: str, *, cache_ttl: str = "5m") -> float | None:
    """The price of one call's usage, or None when the model's price is unknown."""
    info = model_info(model)
    return None if info is None else usage_cost(usage, info, cache_ttl=cache_ttl)


def usage_cost(usage: Usage, info: ModelInfo, *, cache_ttl: str = "5m") -> float:
    """The price of one call's usage at `info`'s rates (its long-context rates when the prompt is over
    their threshold). Writes the provider marked as 1-hour ones are priced at that rate; the others at
    `cache_ttl`'s."""
    if info.long is not None and usage.context_tokens > info.long_from:
        info = info.long
    if usage.cache_write_1h_tokens:
        # The provider said which writes took the 1-hour TTL: price each kind at its own rate.
        writes = ((usage.cache_write_tokens - usage.cache_write_1h_tokens) * info.cache_write_5m
                  + usage.cache_write_1h_tokens * info.cache_write_1h)
    else:
        writes = usage.cache_write_tokens * (info.cache_write_1h if cache_ttl == "1h" else info.cache_write_5m)
    total = (
        usage.input_tokens * info.input
        + usage.output_tokens * info.output
        + usage.cache_read_tokens * info.cache_read
        + writes
    )
    return total / 1_000_000
