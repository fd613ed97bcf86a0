"""Replay a recorded session through a context policy, as if the agent had run with it.

The recorded assistant messages stand in for the model: before each of them a view is built from the
history so far under the chosen policy and measured (what that call would have sent); then the
recorded reply and its tool results enter history as they did in the original run. Policies:

- `recorded`: what the recording itself sent: the full history, except that a compaction the recorded
  agent made (Claude Code's `compact_boundary` and its summary, Codex's `compacted`) replaces what it
  covered, as it did for the agent; each call is measured by its recorded usage (the provider's own
  count) and priced at the model the recording names for it. It is the row every other policy is
  compared with, and `billed_usd` (the bill the recorded usage adds up to) is what its cost model must
  reproduce.
- `naive`: the full history, always.
- `truncate`: keep the system prompt and the first user message (the task statement), drop the oldest
  messages after them until the view fits under the same threshold Nova uses.
- `observation-mask`: SWE-agent's rule, the last 5 tool outputs in full, older ones replaced by a line;
  then truncated as above, since a provider rejects a request over the window.

- `nova`: the context pipeline a live agent runs, built the same way (`nova.agent.pipeline`): the
  controller (spill at entry, cuts, layer 1, layer 2 with the extractive summarizer and the continuity
  guard) and the context compiler (pinned task state, the environment observation), through the same
  extension hooks the agent loop calls. What the live run knew from outside the messages comes from the
  recording (`nova.evaluation.recorded_run`), so a Nova session replayed at its window reproduces it.
- `naive-uncached` / `naive-cached`: the full history with no prompt cache at all / with the provider
  cache of `provider_cache` (Anthropic when none is named): the two baselines of the cost model.

Only `naive` (and its two cost variants) and `recorded` may exceed the window; every other policy cuts
its view to fit. When a stand-in for a fixed prompt the recording lacks leaves no room for that, the
replay runs at the smallest larger window that fits (`window_raised_from`). Every report counts the
requests over the window (`requests_over_window`, and `over_window` on each such call), whatever the
policy.

Token figures come from the token counter (the recorded usage belongs to the original, unpoliced run),
except for a call whose view is provably the one the recording sent (a Nova session replayed as it ran):
its recorded usage is that view's real size. Every view is checked for the invariants of
`nova.history.invariants`.

The cost model (`provider_cache`, `nova.context.cache_sim`) runs every call's view through a simulated
provider cache, at the recorded call times when the recording has them. With `summarizer_estimate`, each
layer-2 compaction also counts the call a model summarizer would have made: the view as last sent plus
the instruction (reading the cached prefix), answering with a summary the size of the extractive one.
Each call is priced at the model the recording names for it (model table); `price_model` is the fallback
for a call that names none or one the table has no price for (`ReplayReport.priced_by` says which priced
what). The agent's own output is priced apart.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Callable, Collection, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, TypedDict, Unpack

from nova.agent.context_runtime import environment_text
from nova.agent.pipeline import ContextPipeline, build_context_pipeline, recorded_sources
from nova.context.budget import ContextBudget
from nova.context.cache_sim import Block, ProviderCache, ProviderName, make_cache, volatile_tail
from nova.context.economy import CachePrices, prices_for
from nova.context.extensions import CompileRequest, Extensions, ViewRequest
from nova.context.manifest import apportion
from nova.context.oversize import MIN_KEPT_TOKENS, NOTE_TOKENS, fit_message
from nova.context.receipt import CompactionReceipt
from nova.context.shown_paths import showing
from nova.context.state import MemoryStateSource, TaskStateStore
from nova.context.summarize import ExtractiveSummarizer, Summarizer, SummaryRequest, summary_instruction
from nova.errors import PromptTooLarge
from nova.evaluation.recorded_run import RecordedRun
from nova.evaluation.recorded_scale import RecordedScale
from nova.evaluation.replay_views import Composer, ViewChange, composition_json, cut_change, view_change
from nova.history.invariants import check_thinking_integrity, check_tool_pairing
from nova.messages import Message, SummaryPart, TextPart, ThinkingPart, ToolResultPart, ToolUsePart, to_dict
from nova.model import ToolSpec, Usage, call_model, is_model_reply, main_model, usage_of
from nova.providers.pricing import ModelInfo, model_info, usage_cost
from nova.sessions.link import SessionLink
from nova.sessions.readers.base import ImportedSession, PipelineRecord
from nova.sessions.readers.nova import session_dir_of
from nova.sessions.readers.usage_check import uncounted_usage_calls
from nova.sessions.repair import positions_after_repair, repair_history
from nova.settings import CompactionConfig, SpillConfig
from nova.tokens import MemoCounter, TokenCounter, TokenLedger, count_message, count_system, count_tools
from nova.tokens.counters import CL100K_PROFILE, HeuristicCounter

__all__ = ["ALL_POLICIES", "POLICIES", "PROVIDER_POLICIES", "ReplayCall", "ReplayReport", "billed_usd", "call_model",
           "fixed_prompt_placeholder", "missing_prompt_split", "recorded_compaction", "recorded_window", "replay_messages",
           "replay_session", "session_window", "unpriced_reason",
           "view_document", "view_text", "with_inlined_placeholder"]

# The policies that fit every call in the window (all but what the recording did and the full history).
FITTING_POLICIES = ("truncate", "observation-mask", "anthropic-clear-tool-uses", "nova")

Policy = Literal["recorded", "naive", "truncate", "observation-mask", "nova", "naive-uncached", "naive-cached",
                 "anthropic-clear-tool-uses"]
# The context policies a replay compares (benchmarks iterate these); `recorded` (what the recording did)
# and the two cost baselines come on top.
POLICIES: tuple[Policy, ...] = ("naive", "truncate", "observation-mask", "nova")
# What a provider does for the user without Nova, simulated: shown beside the policies, not among them.
PROVIDER_POLICIES: tuple[Policy, ...] = ("anthropic-clear-tool-uses",)
ALL_POLICIES: tuple[Policy, ...] = ("recorded", "naive-uncached", "naive-cached", *POLICIES, *PROVIDER_POLICIES)
# How the replay's temporary session directory is named in the view.
REPLAY_SESSION_NAME = "replay-session"
# SWE-agent's default `last_n_observations`.
OBSERVATION_WINDOW = 5
# Anthropic context editing (`clear_tool_uses_20250919`) as documented: it triggers when the input passes
# 100,000 tokens, keeps the 3 newest tool uses' results, and puts a placeholder in each cleared result.
CLEAR_TOOL_USES_TRIGGER = 100_000
CLEAR_TOOL_USES_KEEP = 3
CLEARED_PLACEHOLDER = "[tool result cleared by context editing]"


@dataclass(frozen=True, slots=True)
class ReplayCall:
    input_tokens: int
    event: str
    cache: Usage = field(default_factory=Usage)
    floor: int = 0
    """On a compaction: the continuity floor its summary reports (fixed prompt, the user's words, the
    modified files and last failure, the kept tail cut to the least): the view cannot be smaller. In the
    counter's units, as `counted`: the compaction sized the view with the counter."""
    composition: dict[str, int] = field(default_factory=dict)
    """`input_tokens` by kind (`nova.evaluation.replay_views.COMPOSITION_KINDS`): system, tools, rules, memory,
    history, summary, observations; the parts sum to `input_tokens`."""
    counted: int = 0
    """The token counter's figure for the view; `input_tokens` is the recorded usage instead when `recorded`."""
    recorded: bool = False
    """The view was the one the recording sent, measured by the recorded usage (`ReplayReport.recorded_calls`)."""


@dataclass(kw_only=True)
class ReplayReport:
    policy: str
    window: int
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    peak_context_tokens: int = 0
    compactions: int = 0
    snips: int = 0
    spills: int = 0
    breaker_trips: int = 0
    invariant_violations: int = 0
    requests_over_window: int = 0
    """Calls whose view is larger than the window: a provider would reject them."""
    repaired: str = ""
    """What the resume repair changed in the recording before the replay (empty: nothing)."""
    placeholder_tokens: int = 0
    """Size of the stand-in for the part of the fixed prompt the recording lacks (`fixed_prompt_placeholder`);
    0: none."""
    inlined_placeholder_tokens: int = 0
    """Size of the stand-in, in the first user message, for content the recorded agent inlined into it
    (an `@`-mentioned file) that the recording lacks (`with_inlined_placeholder`); 0: none."""
    recorded_calls: int = 0
    """Calls whose view was the one the recording sent (a Nova recording replayed as it ran), measured by
    their recorded usage instead of the token counter; 0: none."""
    per_call: list[ReplayCall] = field(default_factory=list)
    view_changes: list[ViewChange] = field(default_factory=list)
    """Each compaction (and each truncation cut) with the messages it dropped, kept and added."""
    threshold: int = 0
    """Where compaction starts (the truncation baselines cut to it too)."""
    hard_line: int = 0
    """Over this, compaction runs even with the breaker open."""
    violations: list[str] = field(default_factory=list)
    final_view: list[Message] = field(default_factory=list)
    system: str = ""
    tools: Sequence[ToolSpec] = ()
    # The cost model: agent calls and estimated summary calls together.
    cost_model: bool = False
    """True when a cost option was asked for: only then does `to_json` add the cost keys, so the
    issue-4 object stays exactly as it was for callers that never asked."""
    provider_cache: str = ""
    price_model: str = ""
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    uncached_input_tokens: int = 0
    summary_calls: int = 0
    summary_input_tokens: int = 0
    summary_output_tokens: int = 0
    cost_usd: float | None = None
    """Input side of every call plus the summary calls' output: what the context policy controls. Each call
    is priced at the model the recording names for it; `price_model` (else the recording's own model) is
    the fallback for a call that names none or names one the model table has no price for (`priced_by`
    says which priced what); None when a call's price is unknown."""
    output_cost_usd: float | None = None
    """The agent's own output, the same under every policy, priced apart."""
    billed_usd: float | None = None
    """The real bill: every call's recorded usage (input, cache reads and writes, output) at that call's
    model. None when the recording has no usage or a call's model has no known price."""
    uncounted_usage_calls: int = 0
    """Calls whose recorded usage counts less than their request held, set aside when the file was read
    (`nova.sessions.readers.usage_check`): replayed without usage, and the bill is unknown."""
    window_raised_from: int = 0
    """The window asked for, when the stand-in for a fixed prompt the recording lacks did not fit in it
    alone and the replay ran at `window` instead (the smallest that can work); 0: as asked."""
    unpriced_models: tuple[str, ...] = ()
    """The models of calls no price is known for (why a cost is unknown)."""
    priced_by: tuple[tuple[str, str, int], ...] = ()
    """(model, why, calls): the model each agent call's cost was priced at and why, in order of first use:
    "named by the recording", or the fallback (`--price`, else the recording's own model) with the reason
    (the call names no model, or one the model table has no price for)."""
    receipts: list[CompactionReceipt] = field(default_factory=list)
    """Policy `nova`: the receipt of each compaction, settled with the calls that followed it."""

    @property
    def mean_context_tokens(self) -> float:
        return self.input_tokens / self.calls if self.calls else 0.0

    @property
    def cache_hit_rate(self) -> float:
        """cache read / (uncached + cache read + cache write) over every call, summary calls included."""
        seen = self.uncached_input_tokens + self.cache_read_tokens + self.cache_write_tokens
        return self.cache_read_tokens / seen if seen else 0.0

    @property
    def summary_calls_counted(self) -> str:
        """What the cost holds of the model summary calls, for every screen that prints it: their number,
        or, when the receipts price calls the cost was not asked to count (`--summarizer extractive`),
        that it does not count them and how to have them counted."""
        priced = sum(1 for r in self.receipts if r.summary_cost > 0)
        if self.summary_calls or not priced:
            return str(self.summary_calls)
        return f"not counted (--summarizer model-estimate counts the {priced} the receipts price)"

    def to_json(self) -> dict[str, Any]:
        """The `nova replay --json` object; other tools read these exact keys. The cost model adds its keys
        (and per-call cache figures) when it was asked for."""
        data: dict[str, Any] = {
            "policy": self.policy,
            "window": self.window,
            "calls": self.calls,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "peak_context_tokens": self.peak_context_tokens,
            "compactions": self.compactions,
            "snips": self.snips,
            "spills": self.spills,
            "breaker_trips": self.breaker_trips,
            "invariant_violations": self.invariant_violations,
            "requests_over_window": self.requests_over_window,
            "per_call": [{"input_tokens": c.input_tokens, "event": c.event,
                          **({"over_window": True} if c.input_tokens > self.window else {}),
                          **({"recorded": True} if c.recorded else {}),
                          "composition": composition_json(c.composition)}
                         for c in self.per_call],
            "view_changes": [change.to_json() for change in self.view_changes],
        }
        if self.receipts:
            data["receipts"] = [receipt.to_json() for receipt in self.receipts]
        if self.repaired:
            data["repaired"] = self.repaired
        if self.placeholder_tokens:
            data["placeholder_tokens"] = self.placeholder_tokens
            data["placeholder_estimated"] = True
        if self.inlined_placeholder_tokens:
            data["inlined_placeholder_tokens"] = self.inlined_placeholder_tokens
            data["placeholder_estimated"] = True
        if self.window_raised_from:
            data["window_raised_from"] = self.window_raised_from
        if self.recorded_calls:
            data["recorded_calls"] = self.recorded_calls
        if self.billed_usd is not None:
            data["billed_usd"] = round(self.billed_usd, 6)
        if self.uncounted_usage_calls:
            data["uncounted_usage_calls"] = self.uncounted_usage_calls
        if self.unpriced_models:
            data["unpriced_models"] = list(self.unpriced_models)
        if not self.cost_model:
            return data
        for entry, call in zip(data["per_call"], self.per_call, strict=True):
            entry["cache_read_tokens"] = call.cache.cache_read_tokens
            entry["cache_write_tokens"] = call.cache.cache_write_tokens
        return data | {
            "provider_cache": self.provider_cache or None,
            "price_model": self.price_model or None,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "uncached_input_tokens": self.uncached_input_tokens,
            # null without a simulated cache: nothing was measured, which is not a 0 % hit rate.
            "cache_hit_rate": round(self.cache_hit_rate, 6) if self.provider_cache else None,
            "summary_calls": self.summary_calls,
            "summary_input_tokens": self.summary_input_tokens,
            "summary_output_tokens": self.summary_output_tokens,
            "cost_usd": None if self.cost_usd is None else round(self.cost_usd, 6),
            "output_cost_usd": None if self.output_cost_usd is None else round(self.output_cost_usd, 6),
        }


PLACEHOLDER_HEAD = ("[placeholder: part of the recorded agent's fixed prompt (system prompt, tool definitions) is "
                    "not in the recording; this text stands in for its size, {tokens} tokens, measured from the "
                    "first response's real usage]\n")
_FILLER = "fixed "
# Below this share of the first request, a gap between the real figure and the counted one is the token
# counter's own error (up to ~20 % on the shared trajectories), not a missing part of the prompt (46-99 %
# on recordings that lack their tool definitions or system prompt).
MISSING_SHARE = 1 / 3
INLINED_SHARE = 0.1
INLINED_HEAD = ("[placeholder: content the recorded agent inlined into this message (an @-mentioned file) is not in "
                "the recording; this text stands in for its size, {tokens} tokens, estimated from the real usage of "
                "the first call and of the first call after a compaction]\n")


def _gaps(messages: Sequence[Message], counter: TokenCounter, system: str) -> list[int]:
    """For the first call and the first call after each recorded compaction: its real input minus what
    the recorded messages it was sent (and the recorded `system`) account for. Only these calls are
    measured: their views are small, so the token counter's error (proportional to the view) barely
    moves the figure."""
    gaps: list[int] = []
    known = count_system(system, counter) if system else 0
    fresh = True
    for m in messages:
        if recorded_compaction(m):
            known, fresh = (count_system(system, counter) if system else 0), True
        if m.role == "assistant" and fresh:
            usage = usage_of(m)
            if usage is not None and usage.context_tokens:
                gaps.append(usage.context_tokens - known)
                fresh = False
        known += count_message(m, counter)
    return gaps


def _standin(head: str, tokens: int, counter: TokenCounter) -> str:
    remaining = tokens - count_system(head, counter)
    if remaining <= 0:
        return ""
    per_word = counter.count(_FILLER * 1000) / 1000
    return head + _FILLER * max(0, round(remaining / per_word))


def missing_prompt_split(messages: Sequence[Message], counter: TokenCounter, *, system: str = "") -> tuple[int, int]:
    """(fixed, inlined): how many tokens of the first request are missing from the recording, split into
    the fixed prompt (system prompt, tool definitions: in every call) and content the agent inlined into
    the first user message (a Claude Code `@file` mention: the file is sent as part of the message, the
    recording keeps only the mention). The fixed part is the smallest gap of the first call and of the
    first call after each recorded compaction (a compaction drops the inlined file, never the fixed
    prompt); the rest of the first call's gap is the inlined content. (0, 0) when nothing is missing or
    it cannot be known. With a recorded `system`, a gap under `MISSING_SHARE` of the real figure is
    counting error, not a missing part."""
    gaps = _gaps(messages, counter, system)
    first = next((i for i, m in enumerate(messages) if m.role == "assistant"), None)
    usage = usage_of(messages[first]) if first is not None else None
    if not gaps or usage is None or not usage.context_tokens or gaps[0] <= 0:
        return 0, 0
    fixed = max(0, min(gaps))
    inlined = gaps[0] - fixed
    # An inlined part smaller than the counter's own error on the first request is no part at all.
    if inlined < usage.context_tokens * INLINED_SHARE or not any(m.role == "user" for m in messages[:first]):
        fixed, inlined = gaps[0], 0
    if system and fixed < usage.context_tokens * MISSING_SHARE:
        fixed = 0
    return fixed, inlined


def fixed_prompt_placeholder(messages: Sequence[Message], counter: TokenCounter, *, system: str = "") -> str:
    """A system text as large as the part of the fixed prompt the recording lacks, or "" when nothing
    is missing or it cannot be known (`missing_prompt_split`).

    Recordings of Claude Code, OpenCode, Cline or pi hold the conversation but not the system prompt and
    tool definitions (often 14-26k tokens); Codex and OpenHands keep the system prompt but not the tools.
    A replay without them would start far smaller than the real session did."""
    fixed, _ = missing_prompt_split(messages, counter, system=system)
    return _standin(PLACEHOLDER_HEAD.format(tokens=fixed), fixed, counter) if fixed > 0 else ""


def with_inlined_placeholder(messages: Sequence[Message], counter: TokenCounter, *,
                             system: str = "") -> tuple[list[Message], int]:
    """`messages` with a stand-in, in the last user message before the first call, for what the agent
    inlined into it and the recording lacks (`missing_prompt_split`), and its size (0: none). It is
    part of a message, so a policy can cut or compact it as it would the file itself."""
    _, inlined = missing_prompt_split(messages, counter, system=system)
    first = next((i for i, m in enumerate(messages) if m.role == "assistant"), None)
    if inlined <= 0 or first is None:
        return list(messages), 0
    at = max(i for i in range(first) if messages[i].role == "user")
    text = _standin(INLINED_HEAD.format(tokens=inlined), inlined, counter)
    if not text:
        return list(messages), 0
    out = list(messages)
    out[at] = out[at].with_parts([*out[at].parts, TextPart(text=text, harness=True)])
    return out, count_message(out[at], counter) - count_message(messages[at], counter)


def view_document(report: ReplayReport) -> dict[str, Any]:
    """The final model view, provider-neutral, for `--dump-view`."""
    return {
        "system": report.system,
        "tools": [{"name": t.name, "description": t.description, "input_schema": dict(t.input_schema)}
                  for t in report.tools],
        "messages": [to_dict(m) for m in report.final_view],
    }


def view_text(view: Sequence[Message], *, tool_names: bool = False) -> str:
    """Everything a model reads in `view` as plain text (texts, summaries, tool inputs and outputs), for
    checks of the kind "is this still visible". `tool_names`: each tool call also says which tool it
    calls, before its inputs (`Edit /src/app.py …`), as the model sees it."""
    chunks: list[str] = []
    for m in view:
        for p in m.parts:
            if isinstance(p, ToolUsePart):
                values = [str(v) for v in p.input.values()]
                if tool_names:
                    values[:1] = [" ".join([p.name, *values[:1]])]
                chunks.extend(values)
            elif isinstance(p, ToolResultPart):
                chunks.append(p.content)
            else:
                chunks.append(getattr(p, "text", "") or getattr(p, "thinking", ""))
    return "\n".join(chunks)


class _Sizer:
    def __init__(self, counter: TokenCounter, system: str, tools: Sequence[ToolSpec]) -> None:
        self.counter = counter
        self.system = count_system(system, counter)
        self.tools = count_tools(tools, counter)
        self.fixed = self.system + self.tools
        # Keyed by object identity; the message is kept in the value so its id cannot be reused.
        self._cache: dict[int, tuple[Message, int]] = {}

    def message(self, m: Message) -> int:
        hit = self._cache.get(id(m))
        if hit is None:
            hit = self._cache[id(m)] = (m, count_message(m, self.counter))
        return hit[1]

    def view(self, view: Sequence[Message]) -> int:
        return self.fixed + sum(self.message(m) for m in view)


class _ModelSummaryStandIn:
    """The extractive summary a replay writes where a live Nova would ask its model (`summarizer: auto`
    with a real provider): the cost schedule and the receipts weigh it as the model call it stands for,
    so a replay compacts where the live run did (a session recorded with a model summary included)."""

    model_call = True

    def __init__(self, inner: Summarizer) -> None:
        self.inner = inner
        self.name = inner.name

    def summarize(self, request: SummaryRequest) -> str:
        return self.inner.summarize(request)


class _RecordingSummarizer(_ModelSummaryStandIn):
    """The stand-in for a model summary that also keeps each request with the text it got, so the cost
    model can count the call a model summarizer would have made in its place."""

    def __init__(self, inner: Summarizer) -> None:
        super().__init__(inner)
        self.pending: list[tuple[SummaryRequest, str]] = []

    def summarize(self, request: SummaryRequest) -> str:
        text = self.inner.summarize(request)
        self.pending.append((request, text))
        return text


class _CostModel:
    """Feeds every call (and estimated summary call) through the simulated provider cache, keeps the totals
    on the report and prices each call at its own model: the one the recording names for it, else `info`
    (the fallback: `--price`, else the recording's own model), and counts which priced each call."""

    def __init__(self, *, cache: Callable[[], ProviderCache] | None, sizer: _Sizer, system: str,
                 tools: Sequence[ToolSpec], info: ModelInfo | None, hour_share: float = 0.0, fallback: str = "") -> None:
        self.new_cache = cache
        """Makes a provider's cache for one model: each model has its own (a call on another model reads
        nothing another model's calls wrote)."""
        self._caches: dict[str, ProviderCache] = {}
        """By the model table's name of the model (a dated or gateway spelling is the same model)."""
        self._names: dict[str, str] = {}
        self._last_model = ""
        self.sizer = sizer
        self.info = info
        self.fallback = fallback
        """Where `info` comes from, as the report says it: "--price" or "the recording's model"."""
        self.priced: dict[tuple[str, str], int] = {}
        """(model, why) -> the agent calls priced at that model for that reason."""
        self.hour_share = hour_share
        """The share of the simulated cache writes priced at the 1-hour rate (`_cache_for`)."""
        self.head: list[Block] = []
        if tools:
            self.head.append(Block(_digest([[t.name, t.description, t.input_schema] for t in tools]), sizer.tools))
        if system:
            self.head.append(Block(_digest(system), sizer.system))
        self._blocks: dict[int, tuple[Message, Block]] = {}
        self.calibration: _Calibration | None = None
        self.input_cost: float | None = 0.0
        self.output_cost: float | None = 0.0
        self.unpriced: set[str] = set()

    def block(self, m: Message) -> Block:
        hit = self._blocks.get(id(m))
        if hit is None:
            sent = to_dict(m)
            block = Block(_digest([sent["role"], sent["parts"]]), self.sizer.message(m), max(1, len(m.parts)))
            hit = self._blocks[id(m)] = (m, block)
        return hit[1]

    def call(self, view: Sequence[Message], at: float | None, *, measured: int | None = None,
             model: str = "") -> Usage:
        """The cache figures of one call on `model` ("": the model of the call before it). `measured` is
        the call's real size (its recorded usage): the simulated split is scaled to it, so a recorded call
        is priced at the size the provider billed."""
        blocks = [*self.head, *(self.block(m) for m in view)]
        total = sum(b.tokens for b in blocks)
        cache = self._cache_for(model)
        usage = Usage(input_tokens=total) if cache is None else \
            cache.call(blocks, head=len(self.head), at=at, tail=volatile_tail(view))
        if measured is not None and measured != usage.context_tokens and usage.context_tokens:
            uncached, read, write = apportion(measured, [usage.input_tokens, usage.cache_read_tokens,
                                                         usage.cache_write_tokens])
            usage = Usage(input_tokens=uncached, cache_read_tokens=read, cache_write_tokens=write)
        return self.calibration.apply(usage) if self.calibration is not None else usage

    def _cache_for(self, model: str) -> ProviderCache | None:
        if self.new_cache is None:
            return None
        if model and model not in self._names:
            info = model_info(model)
            self._names[model] = info.name if info is not None else model
        key = self._last_model = self._names.get(model, "") or self._last_model
        if key not in self._caches:
            self._caches[key] = self.new_cache()
        return self._caches[key]

    def add(self, report: ReplayReport, usage: Usage, model: str = "") -> None:
        report.uncached_input_tokens += usage.input_tokens
        report.cache_read_tokens += usage.cache_read_tokens
        report.cache_write_tokens += usage.cache_write_tokens
        self.input_cost = self._priced(self.input_cost, usage, model)

    def output(self, tokens: int, model: str, *, named: str = "") -> None:
        """The agent's own output of one call, priced at `model` (`named`: the model the recording names
        for the call, "" when none)."""
        self.output_cost = self._priced(self.output_cost, Usage(output_tokens=tokens), model)
        own = model_info(named) if named else None
        if own is not None:
            key = (named, "named by the recording")
        elif (info := (known := model_info(model) if model else None) or self.info) is not None:
            name = model if not named and known is not None else info.name
            key = (name, f"{self.fallback}: " + (f"no price for {named}" if named else "the call names no model"))
        else:
            return  # unpriced: the report lists the model in `unpriced_models`
        self.priced[key] = self.priced.get(key, 0) + 1

    def _priced(self, total: float | None, usage: Usage, model: str) -> float | None:
        info = model_info(model) if model else None
        info = info or self.info
        if info is None:
            self.unpriced.add(model or UNNAMED_MODEL)
            return None
        if self.hour_share and usage.cache_write_tokens and not usage.cache_write_1h_tokens:
            usage = replace(usage, cache_write_1h_tokens=round(usage.cache_write_tokens * self.hour_share))
        return None if total is None else total + usage_cost(usage, info)

    def summary_calls(self, report: ReplayReport, pending: list[tuple[SummaryRequest, str]], at: float | None,
                      model: str = "") -> None:
        for request, text in pending:
            shown = list(request.context) or list(request.older)
            kept = max(0, len(shown) - len(request.older)) if request.context else 0
            instruction = Message.user(summary_instruction(max_tokens=request.max_tokens, focus=request.focus,
                                                           transcript_path=request.transcript_path,
                                                           kept_messages=kept, carried=request.carried),
                                       id="summary-instruction")
            usage = self.call([*shown, instruction], at, model=model)
            self.add(report, usage, model)
            report.summary_calls += 1
            report.summary_input_tokens += usage.context_tokens
            output = self.sizer.counter.count(text)
            report.summary_output_tokens += output
            self.input_cost = self._priced(self.input_cost, Usage(output_tokens=output), model)
        pending.clear()

    def price(self, report: ReplayReport) -> None:
        report.cost_usd = self.input_cost
        report.output_cost_usd = self.output_cost
        report.unpriced_models = tuple(sorted(self.unpriced))
        report.priced_by = tuple((model, why, calls) for (model, why), calls in self.priced.items())


@dataclass(frozen=True, slots=True)
class _Calibration:
    """How the provider's real cache differed from the simulated one on the recorded calls. Real caches
    miss more than a model of them does (entries evicted early, a prefix that varied in a part the
    recording does not hold, implicit caching that is best-effort): `read` (at most 1) scales every
    simulated read. Or they hit more: a CLI's fixed prompt is cached across its sessions, so a
    recording's first call reads it: `warm` is the share of what the simulation did not read that was
    read all the same. What is not read is written and sent uncached in the recording's proportion
    (`write_share`). Over the recorded views themselves this reproduces the recorded reads and writes,
    so `recorded` costs what was billed, and every other policy is simulated against the same provider."""

    read: float
    warm: float
    write_share: float

    def apply(self, usage: Usage) -> Usage:
        total = usage.context_tokens
        read = min(total, round(usage.cache_read_tokens * self.read + (total - usage.cache_read_tokens) * self.warm))
        write = round((total - read) * self.write_share)
        return Usage(input_tokens=total - read - write, cache_read_tokens=read, cache_write_tokens=write)

    @classmethod
    def between(cls, simulated: Usage, recorded: Usage) -> _Calibration | None:
        if not recorded.context_tokens or not simulated.context_tokens:
            return None
        rest = recorded.input_tokens + recorded.cache_write_tokens
        write_share = recorded.cache_write_tokens / rest if rest else 0.0
        sim_read, real_read = simulated.cache_read_tokens, recorded.cache_read_tokens
        if real_read <= sim_read:
            return cls(read=real_read / sim_read if sim_read else 1.0, warm=0.0, write_share=write_share)
        unread = simulated.context_tokens - sim_read
        return cls(read=1.0, warm=(real_read - sim_read) / unread if unread else 0.0, write_share=write_share)


def _calibrate(messages: Sequence[Message], make: Callable[[], _CostModel]) -> _Calibration | None:
    """The calibration of the simulated cache on a recording's own calls (`_Calibration`): their views
    as the recording sent them (its own compactions applied) run through a fresh cache, measured by
    their recorded usage, against what that usage says was read and written."""
    cost = make()
    history: list[Message] = []
    simulated, real = Usage(), Usage()
    for message in messages:
        if recorded_compaction(message):
            history = []
        usage = _recorded_usage(message) if message.role == "assistant" else None
        if usage is not None:
            at = message.created_at if message.created_at > 0 else None
            simulated += cost.call(history, at, measured=usage.context_tokens, model=call_model(message))
            real += usage
        if not silent_reply(message):
            history.append(message)
    return _Calibration.between(simulated, real)


def billed_usd(messages: Sequence[Message], *, model: str = "") -> tuple[float | None, tuple[str, ...]]:
    """The real bill of a recording: each call's recorded usage at the model it names (`model` for a call
    that names none), and the models no price is known for. None without usage, with an unknown price, or
    when a call's usage was set aside as not counting its request (the bill it adds up to is not one)."""
    total = 0.0
    seen = False
    unpriced: set[str] = set()
    if uncounted_usage_calls(messages):
        return None, ()
    for m in messages:
        usage = usage_of(m) if m.role == "assistant" else None
        if usage is None or not (usage.context_tokens or usage.output_tokens):
            continue
        seen = True
        name = call_model(m, model)
        info = model_info(name) if name else None
        if info is None:
            unpriced.add(name or UNNAMED_MODEL)
            continue
        total += usage_cost(usage, info)
    return (total if seen and not unpriced else None), tuple(sorted(unpriced))


UNNAMED_MODEL = "unknown model"
"""How `unpriced_models` lists the calls that name no model (and have no fallback)."""


def unpriced_reason(models: Sequence[str]) -> str:
    """Why a cost is unknown, from a report's `unpriced_models`: the models the table has no price for,
    and calls naming none; and what gives one. The CLI line and the report page say it in these words."""
    named = [m for m in models if m != UNNAMED_MODEL]
    reasons = ([f"no price for {', '.join(named)}"] if named else []) + (
        ["calls that name no model"] if len(named) < len(models) else [])
    return "; ".join(reasons or ["no price known"]) + ": --price MODEL gives a fallback"


def recorded_window(messages: Sequence[Message], model: str = "", *, stated: int = 0) -> tuple[int, str]:
    """The window a recording ran with, and the models its calls name (`model` for a call naming none):
    the window the agent `stated` it ran with (Codex's `model_context_window`), else the model table's
    (the largest when the calls name several), or the model's long window when a real request went past
    the usual one (a Claude session run at 1M); 0 when none is known."""
    models = sorted({call_model(m, model) for m in messages if m.role == "assistant"} - {""})
    if stated > 0:
        return stated, ", ".join(models)
    known = [info for m in models if (info := model_info(m))]
    window = max((info.window for info in known), default=0)
    largest = max((u.context_tokens for m in messages if m.role == "assistant" and (u := usage_of(m))), default=0)
    if window and largest > window:
        window = max([window, *(info.max_window for info in known if info.max_window >= largest)])
    return window, ", ".join(models)


def session_window(session: ImportedSession) -> tuple[int, str]:
    """`recorded_window` of an imported recording, with the window its agent wrote down, if any."""
    stated = session.meta.get("context_window")
    return recorded_window(session.messages, str(session.meta.get("model") or ""),
                           stated=stated if isinstance(stated, int) else 0)


def recorded_compaction(message: Message) -> bool:
    """A summary the recorded agent's own compaction left (Claude Code's `compact_boundary` and
    `isCompactSummary`, Codex's `compacted`): from it on, the agent sent it instead of what it covers."""
    # The resume repair may have merged the summary with a user message next to it (and its metadata
    # with it): a summary part in an imported recording is the recorded agent's own.
    return message.has("summary")


def silent_reply(message: Message) -> bool:
    """A model reply with nothing a view can carry: a response of thinking only (Claude Code's, when the
    person interrupted it) is imported as an empty turn. It was a call, billed with its usage, but the
    repair drops it from every view: a replay makes the call and adds nothing to the history."""
    return is_model_reply(message) and all(
        isinstance(p, ThinkingPart) or (isinstance(p, TextPart) and not p.text) for p in message.parts)


def _with_silent_replies(recorded: Sequence[Message], repaired: Sequence[Message]) -> list[Message]:
    """`repaired` with each silent reply (`silent_reply`) the repair dropped put back where it was called:
    after the repaired message that holds what came before it, so its call sees that history. A model
    reply the repair merged into the one before it (Gemini CLI's older chats hold replies in a row whose
    tool calls they did not record) was a call of its own too: it comes back as a silent reply with its
    usage, after the merged message."""
    held: dict[str, int] = {}
    for j, m in enumerate(repaired):
        merged = m.metadata.get("merged_from")
        for ident in {m.id, *(merged if isinstance(merged, list) else ())}:
            held.setdefault(str(ident), j)
    merged_away = {str(i) for m in repaired if is_model_reply(m) and isinstance(m.metadata.get("merged_from"), list)
                   for i in m.metadata["merged_from"][1:]}
    after: dict[int, list[Message]] = {}
    cursor = -1  # the repaired message holding the latest recorded message seen so far
    for m in recorded:
        if m.id in held:
            cursor = max(cursor, held[m.id])
            if m.id in merged_away:
                after.setdefault(cursor, []).append(
                    Message(role="assistant", parts=(TextPart(""),), id=m.id, created_at=m.created_at,
                            metadata={k: v for k, v in m.metadata.items() if k in ("usage", "model")}))
        elif silent_reply(m):
            after.setdefault(cursor, []).append(m)
    if not after:
        return list(repaired)
    out = list(after.get(-1, ()))
    for j, m in enumerate(repaired):
        out.append(m)
        out.extend(after.get(j, ()))
    return out


def _summary_alone(message: Message) -> Message:
    """A recorded compaction's message without the tool results a merge put beside its summary."""
    kept = [p for p in message.parts if not isinstance(p, ToolResultPart)]
    return message.with_parts(kept) if len(kept) < len(message.parts) else message


def _cache_for(messages: Sequence[Message], model: str) -> tuple[ProviderName | None, float, float]:
    """The prompt cache a recording's calls ran against (by the family of its model: Claude's explicit
    breakpoints, else automatic prefix caching), the TTL its writes took and the share of its writes
    that took the 1-hour TTL: a recording whose usage shows 1-hour writes is simulated with 1-hour
    entries, and its simulated writes are priced in the recording's own mix (Claude Code writes about
    two thirds of them for an hour and the rest for 5 minutes)."""
    names = {call_model(m, model) for m in messages if m.role == "assistant"} - {""}
    if not names:
        return None, 300.0, 0.0
    usages = [u for m in messages if m.role == "assistant" and (u := usage_of(m)) is not None]
    written = sum(u.cache_write_tokens for u in usages)
    hour = sum(u.cache_write_1h_tokens for u in usages)
    provider: ProviderName = "anthropic" if any("claude" in n.lower() for n in names) else "openai"
    return provider, (3600.0 if hour else 300.0), (min(1.0, hour / written) if written else 0.0)


def _digest(value: object) -> bytes:
    data = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.blake2b(data.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _fit(view: list[Message], sizer: _Sizer, limit: int, cuts: dict[tuple[str, int], Message]) -> list[Message]:
    """`view` with its largest messages cut in the middle (head and tail kept, a note saying so, as Nova
    shows an oversized message: `nova.context.oversize.fit_message`) until it fits `limit`: what a
    baseline must do when the messages it may not drop (the task statement, the newest exchange) are
    alone over the line. `cuts` memoizes the cut messages across calls."""
    total = sizer.view(view)
    if total <= limit:
        return view
    out = list(view)
    for i in sorted(range(len(out)), key=lambda j: sizer.message(out[j]), reverse=True):
        if total <= limit:
            break
        size = sizer.message(out[i])
        share = max(MIN_KEPT_TOKENS * 2, size - (total - limit) - NOTE_TOKENS)
        key = (out[i].id, share)
        cut = cuts.get(key) or fit_message(out[i], share=share, counter=sizer.counter, transcript="the recording",
                                           reason="the messages a baseline keeps exceed the window", size=size,
                                           force=True)
        if cut is None:
            continue
        cuts[key] = cut
        total += sizer.message(cut) - size
        out[i] = cut
    return out


def _truncate(history: Sequence[Message], sizer: _Sizer, limit: int,
              cuts: dict[tuple[str, int], Message] | None = None) -> list[Message]:
    """The honest truncation baseline: the system prompt and the first user message (the task statement)
    always stay; the oldest messages after them are dropped until the view fits `limit`. When what is
    left is still over it, the largest messages are cut in the middle (`_fit`), so the request fits."""
    return _fit(_truncate_whole(history, sizer, limit), sizer, limit, {} if cuts is None else cuts)


def _truncate_whole(history: Sequence[Message], sizer: _Sizer, limit: int) -> list[Message]:
    first = next((i for i, m in enumerate(history) if m.role == "user" and not m.has("tool_result")), None)
    head = list(history[: first + 1]) if first is not None else []
    rest = history[first + 1:] if first is not None else history
    total = sizer.view(history)
    start = 0
    while start < len(rest) - 1 and total > limit:
        total -= sizer.message(rest[start])
        start += 1
    # Never start on tool results whose call was dropped.
    while start < len(rest) and rest[start].has("tool_result"):
        start += 1
    if rest and start == len(rest):
        # Nothing after the head fits: keep the newest exchange whole (the call and its results).
        start = len(rest) - 1
        while start > 0 and rest[start].has("tool_result"):
            start -= 1
    return [*head, *rest[start:]]


def _stable_inserts(view: Sequence[Message]) -> list[Message]:
    """The view with Nova's own inserts (a compaction summary) named by what they stand for instead of a
    fresh id and the wall clock: the recording decides every other id and time, so the same recording
    gives the same view, byte for byte."""
    out = list(view)
    for i, m in enumerate(out):
        if m.origin is None:
            continue
        covers = [c for p in m.parts if isinstance(p, SummaryPart) for c in p.covers]
        later = next((x.created_at for x in out[i + 1:] if x.origin is None), 0.0)
        out[i] = replace(m, id=f"{m.origin}-{_digest([m.origin, covers, i]).hex()[:16]}", created_at=later)
    return out


def _recorded_usage(message: Message) -> Usage | None:
    """A recorded call's usage when it measured its input (some recordings carry output counts only)."""
    usage = usage_of(message)
    return usage if usage is not None and usage.context_tokens > 0 else None


def _floor(view: Sequence[Message]) -> int:
    """The continuity floor the newest compaction summary in `view` reports (0 when none does)."""
    for m in view:
        sized = m.metadata.get("compaction") if m.origin == "summary" else None
        if isinstance(sized, dict):
            return int(sized.get("floor", 0))
    return 0


def _mask(history: Sequence[Message]) -> list[Message]:
    keep: set[str] = set()
    for m in reversed(history):
        for r in reversed(m.tool_results()):
            if len(keep) < OBSERVATION_WINDOW:
                keep.add(r.tool_use_id)
    out: list[Message] = []
    for m in history:
        results = m.tool_results()
        if not results or all(r.tool_use_id in keep for r in results):
            out.append(m)
            continue
        parts = [
            ToolResultPart(p.tool_use_id, f"Old environment output: ({p.content.count(chr(10)) + 1} lines omitted)",
                           p.is_error)
            if isinstance(p, ToolResultPart) and p.tool_use_id not in keep else p
            for p in m.parts
        ]
        out.append(m.with_parts(parts))
    return out


def _clear_tool_uses(history: Sequence[Message], sizer: _Sizer, *, trigger: int, cleared: set[str],
                     keep: int = CLEAR_TOOL_USES_KEEP, clear_at_least: int = 0) -> list[Message]:
    """Anthropic's server-side `clear_tool_uses`, simulated: the results in `cleared` (what earlier calls
    cleared) are the placeholder; when that view still passes `trigger` tokens, every other tool result
    but the `keep` newest becomes the placeholder too, provided that clears at least `clear_at_least`
    tokens, and joins `cleared`; the calls themselves stay. Between two clearings the cleared prefix is
    the same from call to call, so the cache the clearing rewrote is read again (as documented: each
    clearing costs a cache write, the requests after it reuse the new prefix); re-clearing the fourth
    newest result on every call instead would rewrite the cache from the oldest cleared result each time."""
    view = _with_cleared(history, cleared)
    if sizer.view(view) <= trigger:
        return view
    kept: set[str] = set()
    for m in reversed(history):
        for r in reversed(m.tool_results()):
            if len(kept) < keep:
                kept.add(r.tool_use_id)
    more = {r.tool_use_id for m in history for r in m.tool_results()} - kept - cleared
    if not more:
        return view
    edited = _with_cleared(history, cleared | more)
    if sizer.view(view) - sizer.view(edited) < clear_at_least:
        return view
    cleared |= more
    return edited


def _with_cleared(history: Sequence[Message], cleared: set[str]) -> list[Message]:
    """`history` with the results of the tool uses in `cleared` replaced by the placeholder."""
    return [m if all(r.tool_use_id not in cleared or r.content == CLEARED_PLACEHOLDER for r in m.tool_results())
            else m.with_parts([ToolResultPart(p.tool_use_id, CLEARED_PLACEHOLDER, p.is_error)
                               if isinstance(p, ToolResultPart) and p.tool_use_id in cleared else p
                               for p in m.parts])
            for m in history]


def replay_messages(messages: Sequence[Message], *, window: int, **kwargs: Any) -> ReplayReport:
    """`replay_at` (see there) at `window`; when the recording lacks its fixed prompt and the stand-in for
    it alone does not fit `window`, at the smallest larger window that can work (25 % steps), saying so in
    `report.window_raised_from` rather than refusing the replay."""
    try:
        return replay_at(messages, window=window, **kwargs)
    except PromptTooLarge:
        if kwargs.get("tools"):
            raise
        tried = window
        for _ in range(32):
            tried = int(tried * 1.25) + 1
            try:
                report = replay_at(messages, window=tried, **kwargs)
            except PromptTooLarge:
                continue
            if not report.placeholder_tokens:
                raise
            report.window_raised_from = window
            return report
        raise


def replay_at(
    messages: Sequence[Message],
    *,
    system: str = "",
    tools: Sequence[ToolSpec] = (),
    window: int,
    policy: Policy = "nova",
    config: CompactionConfig | None = None,
    spill: SpillConfig | None = None,
    counter: TokenCounter | None = None,
    summarizer: Summarizer | None = None,
    session_dir: Path | None = None,
    provider_cache: ProviderName | None = None,
    summarizer_estimate: bool = False,
    price_model: str | None = None,
    compact_before: Collection[int] = (),
    on_call: Callable[[], None] | None = None,
    cwd: str = "",
    recorded_dir: str = "",
    recorded: PipelineRecord | None = None,
    model: str = "",
    calibrate: bool = True,
) -> ReplayReport:
    """Replay `messages` (a recorded conversation) under `policy` with a `window`-token model.

    The `nova` policy runs the pipeline a live agent runs (`nova.agent.pipeline.build_context_pipeline`:
    the controller, the continuity guard and the context compiler with its pinned task state and
    environment observation), over `system` and `tools` as the recording sent them, in `cwd` (where the
    recording ran; "" when unknown). `recorded` is what a Nova recording's pipeline did besides sending
    its messages (`nova.evaluation.recorded_run`): its task-state writes, the files its compactions
    re-read and the user's `/compact`s are taken as they were, and while the replay's compactions and
    rewrites are the recorded ones its views are the recorded ones: each such call is measured by its
    recorded usage, which anchors the token ledger as it did live (`report.recorded_calls`).
    `recorded_dir` is the session directory the recorded calls name their spilled outputs under (a Nova
    session's own, `nova.sessions.readers.nova.session_dir_of`): the replay's own are shown under that
    name, so a recorded read of one reads the replay's, and the files under it count as written.
    `model` is the model the recording ran with: its cache prices weigh the cost trigger, as they did
    in the live run (`price_model`'s when given, the defaults when neither is known).

    Without `tools`, the recording may lack part of its fixed prompt: a placeholder sized from the first
    response's real usage is added to `system` (`fixed_prompt_placeholder`, `report.placeholder_tokens`),
    so every replay of such a recording starts at the size the real session did.
    `provider_cache` simulates that provider's prompt cache over the calls; `summarizer_estimate` counts
    a model summarizer's call for each compaction; `price_model` is the fallback price (model table) of
    the calls whose model the recording does not name or the table does not know, where it comes before
    the recording's own `model`; the bill (`billed_usd`) takes `model` first and stays unknown for a
    model the table does not know.
    `compact_before` (policy `nova` only): indexes into `messages` as given, before any repair (0: the
    first message `nova sessions show` lists), before which a compaction is forced as `/compact` would
    (`len(messages)`: before the final view), for tests of what survives N compactions. An index out of
    that range is a ValueError.
    `on_call` is called once after each simulated model call (a progress bar's hook). `calibrate=False`
    keeps the simulated cache as its model says, even against the provider the recording ran on: what a
    view's own prefix stability earns, without the real provider's best-effort misses (`_Calibration`),
    which scale every read alike and no view can change."""
    if policy not in ALL_POLICIES:
        raise ValueError(f"unknown policy {policy!r}; choose one of {', '.join(ALL_POLICIES)}")
    info = model_info(price_model) if price_model else None
    if price_model and info is None:
        raise ValueError(f"no price for model {price_model!r} in the model table")
    # Every call is priced at the model the recording names for it; `price_model` (else the session's
    # model) for a call that names none or one the model table does not know (`fallback`).
    default_model = price_model or model
    fallback = info or (model_info(model) if model else None)
    recorded_cache, ttl_s, hour_share = _cache_for(messages, default_model)
    billed, unbilled = billed_usd(messages, model=model or price_model or "")
    if policy == "naive-uncached":
        provider_cache = None
    elif policy == "naive-cached":
        provider_cache = provider_cache or "anthropic"
    else:
        # The cache the recorded calls ran against, unless another one is asked for.
        provider_cache = provider_cache or recorded_cache
    # A recording is replayed as a resume would load it: unanswered calls, misplaced results and the like
    # are repaired the same way (a provider would refuse them), and the report says what was done.
    recorded_messages = messages
    messages, repair = repair_history(messages)
    messages = _with_silent_replies(recorded_messages, messages)
    # The caller counts messages as recorded (as `nova sessions show` lists them); the replay runs over
    # the repaired ones, which a merge or a dropped message may have renumbered.
    forced = _repaired_indexes(compact_before, recorded_messages, messages) if compact_before else frozenset()
    config = config or CompactionConfig()
    # One memoizing counter measures everything, as the live agent's ledger does.
    counter = MemoCounter(counter or HeuristicCounter(CL100K_PROFILE))
    placeholder = "" if tools else fixed_prompt_placeholder(messages, counter, system=system)
    placeholder_tokens = count_system(placeholder, counter) if placeholder else 0
    inlined = 0
    if not tools:
        messages, inlined = with_inlined_placeholder(messages, counter, system=system)
    system = "\n\n".join(part for part in (system, placeholder) if part)
    recording = _RecordingSummarizer(summarizer or ExtractiveSummarizer(counter)) if summarizer_estimate else None
    budget = ContextBudget.derive(config, window, spill)
    with tempfile.TemporaryDirectory(prefix="nova-replay-") as tmp, ExitStack() as shown:
        directory = session_dir or Path(tmp) / "session"
        if session_dir is None or recorded_dir:
            # The temporary directory's name is random: the view names it by a fixed one, so the same
            # recording gives the same figures, byte for byte (nova.context.shown_paths).
            shown.enter_context(showing(directory, recorded_dir or REPLAY_SESSION_NAME))
        pipeline = None
        run = RecordedRun(recorded if policy == "nova" else None, messages, _read_paths(messages))
        if policy == "nova":
            # The spill limits scale with the window like every other size (a configured value is clamped):
            # the budget carries them.
            state = TaskStateStore(MemoryStateSource())
            # A Nova session whose receipts say its summaries made no call (the demo, `summarizer:
            # extractive`) decided as such; any other recording as a live Nova with a model would.
            extractive: Summarizer = ExtractiveSummarizer(counter)
            if recorded is None or recorded.summarized_by_model is not False:
                extractive = _ModelSummaryStandIn(extractive)
            summarizing = recording or summarizer or extractive
            pipeline = build_context_pipeline(
                budget=budget, config=config, ledger=TokenLedger(counter), sources=recorded_sources(system),
                state=state, summarizer=summarizing, tools=tools,
                cwd=Path(cwd or "."), session=SessionLink(dir=directory, recorder=run), read_file=run.read_file,
                # A recording that names no model of its own is priced at the one its calls name most, so
                # its receipts are in dollars as its bill is.
                prices=CachePrices.of(info) if info else prices_for(model or main_model(messages)),
                environment=_recorded_environment(cwd, nova=recorded is not None or bool(recorded_dir)),
                workspace=_recorded_workspace(state), readable=_recorded_files(recorded_dir))
        sizer = _Sizer(counter, system, tools)
        first = next((model_info(call_model(m)) for m in messages if m.role == "assistant" and call_model(m)), None)
        cache_info = info or first or fallback
        min_tokens = cache_info.min_cacheable_tokens if cache_info else 1024
        def cost_model() -> _CostModel:
            made = None if not provider_cache else (
                lambda: make_cache(provider_cache, min_tokens=min_tokens, ttl_s=ttl_s))
            return _CostModel(cache=made, sizer=sizer, system=system, tools=tools, info=fallback, hour_share=hour_share,
                              fallback="--price" if info is not None else "the recording's model")

        cost = cost_model()
        if calibrate and provider_cache is not None and provider_cache == recorded_cache and billed is not None:
            # Simulated against the provider the recording ran on: calibrated on the recorded calls.
            cost.calibration = _calibrate(messages, cost_model)
        report = _run(messages, system=system, tools=tools, window=window, policy=policy, budget=budget,
                      pipeline=pipeline, sizer=sizer, cost=cost, recording=recording,
                      compact_before=forced | run.manual, on_call=on_call, run=run,
                      model=default_model, refuse_over=bool(placeholder) and policy in FITTING_POLICIES,
                      placeholder_tokens=placeholder_tokens)
    report.repaired = repair.describe() if repair.changed else ""
    report.placeholder_tokens = placeholder_tokens
    report.inlined_placeholder_tokens = inlined
    report.cost_model = bool(provider_cache or price_model or summarizer_estimate or fallback or billed is not None
                             or policy in ("naive-uncached", "naive-cached"))
    report.billed_usd = billed
    report.uncounted_usage_calls = uncounted_usage_calls(recorded_messages)
    report.provider_cache = provider_cache or ""
    report.price_model = price_model or ""
    cost.price(report)
    report.unpriced_models = tuple(sorted({*report.unpriced_models, *unbilled}))
    return report


class ReplayOptions(TypedDict, total=False):
    """The keywords of `replay_messages` a caller chooses (the rest come from the recording)."""

    policy: Policy
    config: CompactionConfig | None
    spill: SpillConfig | None
    counter: TokenCounter | None
    summarizer: Summarizer | None
    session_dir: Path | None
    provider_cache: ProviderName | None
    summarizer_estimate: bool
    price_model: str | None
    compact_before: Collection[int]
    on_call: Callable[[], None] | None
    calibrate: bool


def _repaired_indexes(indexes: Collection[int], recorded: Sequence[Message],
                      repaired: Sequence[Message]) -> frozenset[int]:
    """`indexes` (before recorded messages) as indexes before the repaired ones
    (`nova.sessions.repair.positions_after_repair`)."""
    wrong = sorted(i for i in indexes if not 0 <= i <= len(recorded))
    if wrong:
        raise ValueError(f"compact_before: message index {wrong[0]} is outside the recording's 0-{len(recorded)} "
                         f"({len(recorded)} messages; {len(recorded)} is before the final view)")
    positions = positions_after_repair(recorded, repaired)
    return frozenset(positions[i] for i in indexes)


def replay_session(session: ImportedSession, *, window: int, **options: Unpack[ReplayOptions]) -> ReplayReport:
    """`replay_messages` over an imported recording, with everything the recording holds besides its
    messages: system prompt, tools, working directory, model, and (a Nova session's) what its pipeline
    did and the session directory its calls name."""
    recorded = session_dir_of(session)
    return replay_messages(session.messages, system=session.system, tools=session.tools, window=window,
                           cwd=session.working_directory, recorded_dir=str(recorded) if recorded is not None else "",
                           recorded=session.pipeline, model=str(session.meta.get("model") or ""), **options)


def _recorded_environment(cwd: str, *, nova: bool) -> Callable[[Path], str]:
    """The environment observation a replay shows. A Nova recording's calls held one, so its replay does:
    the recorded working directory, never the state of whatever folder has that name on this machine (its
    git branch is not in the recording). Another agent's recording gets none: its own prompt told the
    model where it ran (Claude Code's environment section, Codex's `environment_context`), so Nova's would
    say it twice, with this machine's platform, on every call the recording never paid for. Nor does a
    recording that names no folder: "cwd: unknown" tells the model nothing."""
    text = environment_text(cwd=cwd) if cwd and nova else ""
    return lambda _: text


def _recorded_files(recorded_dir: str) -> Callable[[Path], bool]:
    """Whether a file a summary points to exists, for a replay: the recorded session's own files (its
    spilled and cut outputs, and the replay's, shown under its name) were there when the session ran."""
    def readable(path: Path) -> bool:
        return (bool(recorded_dir) and str(path).startswith(recorded_dir.rstrip("/") + "/")) or path.is_file()

    return readable


def _read_paths(messages: Sequence[Message]) -> set[str]:
    """Every path the recording read with a file-reading tool (what a restore attachment may show)."""
    paths: set[str] = set()
    for m in messages:
        for u in m.tool_uses():
            path = u.input.get("path") or u.input.get("file_path")
            if isinstance(path, str):
                paths.add(path)
    return paths


def _recorded_workspace(state: TaskStateStore) -> Callable[[Path], str]:
    """A replay has no workspace to hash: the newest recorded test run reads as current, as it does in a
    live session right after it ran."""
    def newest(_: Path) -> str:
        evidence = state.load().evidence
        return evidence[-1].workspace if evidence else ""

    return newest


def _run(
    messages: Sequence[Message], *, system: str, tools: Sequence[ToolSpec], window: int, policy: Policy,
    budget: ContextBudget, pipeline: ContextPipeline | None, sizer: _Sizer, cost: _CostModel,
    recording: _RecordingSummarizer | None, compact_before: frozenset[int] = frozenset(),
    on_call: Callable[[], None] | None = None, run: RecordedRun | None = None, model: str = "",
    refuse_over: bool = False, placeholder_tokens: int = 0,
) -> ReplayReport:
    """`refuse_over`: a call over the window raises `PromptTooLarge` instead of being counted (a baseline
    over a fixed-prompt stand-in: the window must grow, as it does when Nova's controller refuses).
    `placeholder_tokens`: the size of that stand-in, sized from the recorded usage (`RecordedScale`)."""
    report = ReplayReport(policy=policy, window=window, system=system, tools=tools,
                          threshold=budget.threshold, hard_line=budget.hard_line)
    raw = {m.id: m for m in messages}
    history: list[Message] = []
    calls_by_id: dict[str, ToolUsePart] = {}
    counter = sizer.counter
    # The composition is made of the sizer's own measures: its sum is the call's input.
    composer = Composer(system=sizer.system, tools=sizer.tools, size=sizer.message, count=counter.count)
    # The names Nova's inserts are listed under (their ids are fresh each run; see `_stable_inserts`).
    names: dict[str, str] = {}
    shown: list[Message] = []  # the view the previous call sent (what a cut is measured against)
    # Nova's pipeline, run through the same hooks the agent loop calls (nova.context.extensions).
    hooks = Extensions(pipeline.extensions) if pipeline is not None else None
    controller = pipeline.controller if pipeline is not None else None
    run = run or RecordedRun(None, messages, ())

    def move_to(index: int) -> None:
        # The task state the recorded calls were compiled with from here on (the pinned block).
        recorded = run.move_to(index)
        if recorded is not None and pipeline is not None:
            pipeline.state.update(lambda current: replace(recorded, version=current.version))

    def compacted(before: list[Message], after: list[Message], *, forced: bool) -> None:
        report.view_changes.append(view_change(
            call=report.calls + 1, event="compaction", forced=forced, before=before, after=after,
            shown_after=_stable_inserts(after), size=sizer.message, count=counter.count, names=names))

    def build_view() -> tuple[list[Message], str]:
        nonlocal history
        if policy in ("recorded", "naive", "naive-uncached", "naive-cached"):
            return list(history), ""
        # A baseline cuts to the line as the provider last counted, not only as the counter does.
        line = scale.fit_limit(budget.threshold)
        if policy == "truncate":
            view = _truncate(history, sizer, line, cuts)
            return view, "truncate" if len(view) < len(history) else ""
        if policy == "anthropic-clear-tool-uses":
            # The documented trigger, lowered to Nova's threshold at a smaller window (else it would never
            # fire before the provider rejects the request), then still cut to the same line.
            edited = _clear_tool_uses(history, sizer, trigger=min(CLEAR_TOOL_USES_TRIGGER, line), cleared=cleared)
            view = _truncate(edited, sizer, line)
            return view, "truncate" if len(view) < len(edited) else ""
        if policy == "observation-mask":
            # SWE-agent's masking, then still cut to the same line: a provider rejects a request over
            # the window, so a baseline that sends one flatters nobody.
            masked = _mask(history)
            view = _truncate(masked, sizer, line, cuts)
            return view, "truncate" if len(view) < len(masked) else ""
        assert hooks is not None and controller is not None
        before = history
        history = hooks.prepare_view(ViewRequest(history=history, system=system))
        event = controller.stats.last_event
        if event == "compaction" or {m.id for m in before} - {m.id for m in history}:
            compacted(before, history, forced=False)
        compiled = hooks.compile_view(CompileRequest(history=history, system=system, tools=tools))
        return (list(compiled.messages) if compiled is not None else list(history)), event

    def force_compaction() -> None:
        nonlocal history
        assert controller is not None
        before, done = history, controller.stats.compactions
        history = controller.compact_now(history)
        if controller.stats.compactions > done:
            compacted(before, history, forced=True)

    boundary = ""  # "compaction" for the first call after a recorded compaction (policy `recorded`)
    cuts: dict[tuple[str, int], Message] = {}  # the baselines' cut messages (`_fit`)
    cleared: set[str] = set()  # the tool uses whose results context editing cleared so far
    scale = RecordedScale(fixed=sizer.fixed, size=sizer.message, views_in_transcript=run.record is None,
                          measured=placeholder_tokens)
    for index, message in enumerate(messages):
        move_to(index)
        if recorded_compaction(message):
            scale.compacted()
            if policy == "recorded":
                # The recorded agent's own compaction: its summary replaces everything before it. A
                # compaction that ran right after a tool result leaves that result next to the summary,
                # and the repair merged the two: the result answers a call the summary covers, so it
                # goes with the call (kept, it would answer nothing in the view).
                message = _summary_alone(message)
                compacted(history, [message], forced=False)
                report.compactions += 1
                history, boundary = [], "compaction"
        if policy == "nova" and index in compact_before:
            force_compaction()
        if is_model_reply(message):
            at = message.created_at if message.created_at > 0 else None
            view, event = build_view()
            event, boundary = event or boundary, ""
            called = call_model(message, model)
            if event == "truncate":
                cut = cut_change(call=report.calls + 1, previous=shown, view=view, size=sizer.message,
                                 count=counter.count)
                if cut is not None:
                    report.view_changes.append(cut)
            shown = view
            if recording is not None:
                cost.summary_calls(report, recording.pending, at, called)
            kinds = composer.composition(view)
            counted = sum(kinds.values())
            anchor = run.anchor(message) if policy != "recorded" else _recorded_usage(message)
            measured = anchor.context_tokens if anchor is not None else None
            if anchor is not None:
                # The recorded view itself: measured as the provider counted it, parts in proportion.
                report.recorded_calls += 1
                scale.recorded_view(counted, anchor.context_tokens)
            elif policy != "recorded" and (real := _recorded_usage(message)) is not None:
                # Another view at a recorded call: its estimate, as far off as the counter is from the
                # provider's count of the recorded view there (nova.evaluation.recorded_scale).
                measured = scale.scaled(counted, real)
            if measured is not None:
                kinds = dict(zip(kinds, apportion(measured, list(kinds.values())), strict=True))
            used = sum(kinds.values())
            usage = cost.call(view, at, measured=measured, model=called)
            cost.add(report, usage, called)
            report.calls += 1
            report.input_tokens += used
            report.peak_context_tokens = max(report.peak_context_tokens, used)
            if used > window and refuse_over:
                raise PromptTooLarge(fixed_tokens=sizer.fixed, window=window)
            report.requests_over_window += used > window
            report.per_call.append(ReplayCall(used, event, usage, _floor(view) if event == "compaction" else 0,
                                              kinds, counted=counted, recorded=anchor is not None))
            problems = check_tool_pairing(view) + check_thinking_integrity(view, raw)
            report.invariant_violations += len(problems)
            report.violations.extend(f"call {report.calls}: {p}" for p in problems[:5])
            recorded = usage_of(message)
            output = recorded.output_tokens if recorded is not None else sizer.message(message)
            report.output_tokens += output
            cost.output(output, called, named=call_model(message))
            if on_call is not None:
                on_call()
            if silent_reply(message):
                continue  # a call that answered nothing a view carries: the history stays as it was
            for u in message.tool_uses():
                calls_by_id[u.id] = u
            history.append(message)
            if anchor is not None and pipeline is not None and hooks is not None:
                # As the live loop does with a reply: the ledger learns from the view it answered.
                pipeline.ledger.record(message.id, anchor, sent=view)
                hooks.on_usage(message, anchor)
        elif message.has("tool_result") and hooks is not None:
            parts = [hooks.process_result(calls_by_id[p.tool_use_id], p)
                     if isinstance(p, ToolResultPart) and p.tool_use_id in calls_by_id else p
                     for p in message.parts]
            if parts != list(message.parts):
                run.spilled(message.id)
                message = message.with_parts(parts)
            history.append(message)
        else:
            history.append(message)
        scale.add(messages[index])
    move_to(len(messages))
    if policy == "nova" and len(messages) in compact_before and history:
        force_compaction()
    final, _ = build_view() if history else ([], "")
    if recording is not None:
        recording.pending.clear()  # a compaction of the final view is never sent: no call to count
    report.final_view = _stable_inserts(final)
    if controller is not None:
        report.compactions = controller.stats.compactions
        report.snips = controller.stats.snips
        report.spills = controller.stats.spills
        report.breaker_trips = controller.stats.breaker_trips
        report.receipts = settled_receipts(controller.receipts, calls=report.calls)
    return report


def settled_receipts(receipts: Sequence[tuple[int, CompactionReceipt]], *, calls: int) -> list[CompactionReceipt]:
    """Each receipt with the calls it served: from the first call sent its view up to the next compaction's,
    or to the last call of the run. A compaction of the final view (never sent) served none."""
    starts = [first for first, _ in receipts] + [calls + 1]
    return [receipt.settled(max(0, min(starts[i + 1], calls + 1) - first))
            for i, (first, receipt) in enumerate(receipts)]
