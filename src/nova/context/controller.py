"""`ContextController`: decides, before every model call, what the working history must shed.

It is the agent's first extension (`nova.context.extensions`, order 100) and implements these hooks:

- `process_result` (each tool result entering history): the per-result spill (SPILL-1, 3, 4).
- `prepare_view` (before every call): the per-message spill of new tool results (SPILL-2), then the
  one context figure (TOK-1, through the token ledger); at or over the threshold (CMP-1): layer 1, measure
  again (CMP-4), layer 2 if still over, respecting the circuit breaker unless the hard trigger fired
  (CMP-2, CMP-8); then the thrash guard. Under the threshold nothing is touched, so the prefix stays
  byte-stable between compactions (CMP-3), unless a compaction now is cheaper than re-sending the view
  on the calls that follow (`nova.context.economy`; never below the budget's `cost_floor`).
- `on_overflow` (after a `ContextOverflow`): one forced compaction that ignores the estimate (CMP-9).
- `on_usage` (after each call): emits `CONTEXT_UPDATE` with the call's real figure (the loop has
  recorded it in the session's one ledger, TOK-2).
- `compact` (`/compact [focus]`): layer 1 and layer 2 whatever the threshold.

Every decision is bounded: one layer-2 attempt per call at most, and the thrash guard snips the outputs
that keep refilling the window instead of compacting again and again.

Every size it works to comes from one `ContextBudget` (nova.context.budget), and every figure from the
session's one `TokenLedger`, both given at construction.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from nova import events as ev
from nova.context.budget import BudgetLines, ContextBudget
from nova.context.compaction import (
    OUTPUT_DIR,
    CompactionOutcome,
    RestoreContext,
    compact,
    is_nova_insert,
    message_size,
    pinned_opening,
    snip_old_tool_results,
)
from nova.context.economy import CachePrices, cost_line
from nova.context.extensions import Extension, ViewRequest
from nova.context.oversize import CUT_DIR, fit_message
from nova.context.receipt import CompactionReceipt, compaction_receipt, receipt_line
from nova.context.shown_paths import shown_path
from nova.context.spill import Spiller
from nova.context.summarize import ExtractiveSummarizer, Summarizer, is_user_message
from nova.errors import PromptTooLarge
from nova.history.incremental import follow
from nova.messages import Message, ToolResultPart, ToolUsePart
from nova.model import ToolSpec, Usage
from nova.sessions.link import SessionLink
from nova.sessions.recorder import BoundaryRecord
from nova.settings import CompactionConfig
from nova.tokens import (
    TokenCounter,
    TokenLedger,
    context_percent,
    count_message,
    count_system,
    count_tools,
)

__all__ = ["CompactionHooks", "ContextController", "ContextStats", "FixedPrompt", "Measure"]

log = logging.getLogger(__name__)

# A compaction followed by the window filling up again within this many model calls is thrashing.
THRASH_CALLS = 3
Reason = Literal["threshold", "overflow", "manual", "hard", "cost"]
# Calls watched before the growth per call is trusted for a cost decision.
GROWTH_CALLS = 3


@dataclass(kw_only=True)
class ContextStats:
    """Counters for reports (replay, `/context`, logs)."""

    calls: int = 0
    compactions: int = 0
    compaction_failures: int = 0
    compaction_skips: int = 0
    consecutive_failures: int = 0
    breaker_open: bool = False
    breaker_trips: int = 0
    snips: int = 0
    snip_failures: int = 0
    spills: int = 0
    spill_failures: int = 0
    cuts: int = 0
    """Messages over their share of the budget, shown cut (nova.context.oversize)."""
    thrash_events: int = 0
    thrash_culprits: list[str] = field(default_factory=list)
    last_event: str = ""


Measure = Callable[[Sequence[Message], str, Sequence[ToolSpec]], int]
"""The one context figure of a history, given the system text and the tools (`ContextRuntime.measure`)."""


@dataclass(frozen=True, kw_only=True)
class FixedPrompt:
    """What every request begins with: the system text and the tool schemas (the fixed part of the
    prompt, which no compaction can shrink)."""

    system: str = ""
    tools: Sequence[ToolSpec] = ()


@dataclass(frozen=True, kw_only=True)
class CompactionHooks:
    """What the rest of the context pipeline lends the controller. Each is optional: a controller on its
    own measures the history itself, keeps its own raw log, restores no file and checks nothing after a
    compaction."""

    measure: Measure | None = None
    """The figure of the view sent when it is not the history itself (the context compiler adds pinned
    state and observations)."""
    raw: dict[str, Message] | None = None
    """The first-seen version of every message, shared with whoever else rebuilds from it (the continuity
    guard)."""
    on_compacted: Callable[[CompactionOutcome], None] | None = None
    """Runs after each successful compaction (the continuity check)."""
    read_file: Callable[[str], str | None] | None = None
    """Reads a file's current text for the restore attachment (CMP-7); None: the last read result is used."""
    skills: Callable[[], Sequence[tuple[str, str]]] | None = None
    """(name, procedure) of the skills in use, restored after a compaction."""


class ContextController(BudgetLines, Extension):
    order = 100

    def __init__(
        self,
        *,
        budget: ContextBudget,
        ledger: TokenLedger,
        session: SessionLink,
        config: CompactionConfig = CompactionConfig(),
        summarizer: Summarizer | None = None,
        prompt: FixedPrompt = FixedPrompt(),
        hooks: CompactionHooks = CompactionHooks(),
        prices: CachePrices = CachePrices(),
    ) -> None:
        """`budget` gives every size, the spill limits included. `ledger` is the session's one token
        ledger (TOK-3), the one the agent loop records each reply in; the controller counts with its
        counter and clears its anchor after a snip or a compaction. `session` is where the events go and
        what is recorded: every snipped message and every compaction boundary. `summarizer` writes the
        compaction summary (default: extractive, no model call). `prices` are the model's cache prices
        (relative to uncached input) for the cost trigger."""
        self.config = config
        self.budget = budget
        self.ledger = ledger
        self.counter: TokenCounter = ledger.counter
        self.summarizer: Summarizer = summarizer or ExtractiveSummarizer(self.counter)
        self.bus = session.bus
        self.session_id = session.id
        self.session_dir = session.dir
        self.recorder = session.recorder
        self.system = prompt.system
        self.tools: Sequence[ToolSpec] = prompt.tools
        self.skills = hooks.skills
        self.read_file = hooks.read_file
        self.on_compacted = hooks.on_compacted
        self.spiller = Spiller(config=budget.spill, session_dir=session.dir)
        self.stats = ContextStats()
        self.raw: dict[str, Message] = {} if hooks.raw is None else hooks.raw
        """First-seen version of every message: the in-memory raw log layer 2 rebuilds from (CMP-10)."""
        self._budget_checked: set[str] = set()
        self._viewed: list[Message] = []
        """The history of the last `prepare_view` (a mirror, see `nova.history.incremental.follow`)."""
        self._last_compaction_call: int | None = None
        self.last_used = 0
        self._measure = hooks.measure
        self.prices = prices
        self._growth_from: tuple[int, int] | None = None
        """(call, view) where the current growth run started: the first call, or the last shrink."""
        self._last_after: int | None = None
        """The view right after the last compaction: what the next one will likely leave."""
        self._last_call_at: float | None = None
        """When the last reply arrived (its message time): the cost schedule's cache clock."""
        self._cost_failed_at: int | None = None
        """The view when the last cost-timed compaction failed (None once one succeeds)."""
        self.receipts: list[tuple[int, CompactionReceipt]] = []
        """(first call sent the compacted view, receipt) of every successful compaction, in order (replay
        settles each with the calls that followed)."""
        self._summed: list[Message] = []
        """The history `_history_tokens` last summed, and below, the running totals of its messages."""
        self._running: list[int] = [0]
        self._summed_with: TokenCounter | None = None
        self._fixed: tuple[tuple[Any, ...], int] = ((), 0)
        """(system, tools, counter) and their tokens, as `_fixed_tokens` last counted them."""

    # -- derived numbers (the budget's lines come from `BudgetLines`) ------------------------------------
    @property
    def output_dir(self) -> Path | None:
        return self.session_dir / OUTPUT_DIR if self.session_dir is not None else None

    @property
    def cut_dir(self) -> Path | None:
        return self.session_dir / CUT_DIR if self.session_dir is not None else None

    @property
    def transcript_path(self) -> str:
        return shown_path(self.session_dir / "transcript.jsonl") if self.session_dir is not None else ""

    # -- hooks ----------------------------------------------------------------------------------------
    def process_result(self, *, call: ToolUsePart, result: ToolResultPart) -> ToolResultPart:
        before = self.spiller.stats.spilled, self.spiller.stats.write_failures
        out = self.spiller.process_result(call, result)
        self._count_spills(before)
        return out

    def prepare_view(self, *, request: ViewRequest) -> list[Message]:
        self.system = request.system
        self._check_fixed()
        history = self._entry_budget(request.history)
        # Only what is new since the last view: the rest was remembered then (`follow` finds it without
        # walking the history).
        self.remember(history[follow(self._viewed, history):])
        self.stats.calls += 1
        self.stats.last_event = ""
        used = self.measure(history)
        if used >= self.threshold:
            history, used = self._relieve(history, used, reason="hard" if used >= self.hard_line else "threshold")
        elif self._worth_compacting(history, used):
            failures = self.stats.compaction_failures
            history, used = self._layer2(history, used, reason="cost", forced=False, focus="", sent=history,
                                         target=used // 2, budget=self.budget.for_cost(used))
            if self.stats.compaction_failures > failures:
                self._cost_failed_at = used
        if self._growth_from is None or used < self.last_used:
            self._growth_from = (self.stats.calls, used)
        self.last_used = used
        self._emit_context(used)
        return history

    def _worth_compacting(self, history: Sequence[Message], used: int) -> bool:
        """Below the soft line: is a compaction now cheaper than re-sending this view on the calls that
        follow (nova.context.economy)? Never under the cost floor, with the breaker open, or right after
        another compaction."""
        floor = self.budget.cost_floor or self.threshold
        if used < floor or self.stats.breaker_open or self._thrashing():
            return False
        if self._cost_failed_at is not None and used < self._cost_failed_at + floor:
            # The last one failed: it paid for the summary and saved nothing, and the same history would
            # fail the same way on the next call. Compacting is optional down here (the soft line still
            # compacts), so it waits until the view has grown by the least worth a try, the cost floor.
            return False
        if self._growth_from is None:
            return False
        since, base = self._growth_from
        calls = self.stats.calls - since
        if calls < GROWTH_CALLS:
            return False
        growth = (used - base) / calls
        after = self._expected_after(history, used)
        summary_tokens = self.budget.for_cost(used).summary_cap
        if self.config.schedule == "cost":
            return self._pays_now(history, used, after=after, growth=growth, summary_tokens=summary_tokens)
        line = cost_line(after=after, growth=growth, summary_tokens=summary_tokens, prices=self.prices)
        return line is not None and used >= line

    def _pays_now(self, history: Sequence[Message], used: int, *, after: int, growth: float,
                  summary_tokens: int) -> bool:
        """The `cost` schedule: compact when carrying this view for the calls expected costs more than the
        summary call plus the cache rewrite it causes (the receipt's own figures). The expected remaining
        calls are the calls made so far (a run of unknown length is, at the median, as old again as it is
        now), or the configured default before there are enough. When more are expected than are left
        before the soft line, which compacts anyway, it compacts when the compaction pays within one cycle
        (the calls from the view it leaves back to the soft line). A cold cache (the TTL passed since the last call) is a discount: the next call
        writes the whole prefix anyway, so compacting rewrites nothing that was not lost."""
        model_call = self.summarizer.model_call
        receipt = compaction_receipt(tokens_before=used, tokens_after=after,
                                     summary_input_tokens=used if model_call else 0,
                                     summary_output_tokens=summary_tokens if model_call else 0, prices=self.prices,
                                     kept_prefix_tokens=self._fixed_tokens() + self._pinned_tokens(history))
        cost = receipt.summary_cost + (0.0 if self._cache_cold(history) else receipt.rewrite_cost)
        remaining = self.stats.calls if self.stats.calls >= 2 * GROWTH_CALLS else self.config.expected_calls
        if growth > 0:
            before_soft = max(1, int((self.threshold - used) / growth))
            if remaining > before_soft:
                # The run is expected to reach the soft line, which compacts anyway: compacting now instead
                # moves every later compaction as many calls earlier, which over a long run adds the share
                # of one compaction that the calls moved are of a cycle (soft line back to `after`), and
                # saves as much on each of those calls. It pays when the compaction pays within one cycle.
                cycle = max(1.0, (self.threshold - after) / growth)
                return cycle * receipt.saving_per_call > cost
            remaining = min(remaining, before_soft)
        return remaining * receipt.saving_per_call > cost

    def _cache_cold(self, history: Sequence[Message]) -> bool:
        """The provider's cache TTL has passed between the last call and the newest message (message
        times, so a replay decides as the live run did)."""
        if self._last_call_at is None or not history:
            return False
        return history[-1].created_at - self._last_call_at > self.config.cache_ttl_seconds

    def _expected_after(self, history: Sequence[Message], used: int) -> int:
        """The view a compaction would leave: what the last one left, else the fixed part, the task
        statement, the summary and the kept tail (at most the post-compaction target,
        unless the task statement alone is larger)."""
        if self._last_after is not None:
            return self._last_after
        first = next((m for m in history if is_user_message(m)), None)
        task = count_message(first, self.counter) if first is not None else 0
        budget = self.budget.for_cost(used)
        estimate = self._view_overhead(history, used) + budget.summary_cap + budget.keep_tokens
        return task + min(estimate, budget.post_compaction_target)

    def on_overflow(self, *, request: ViewRequest) -> list[Message] | None:
        """CMP-9: force one compaction ignoring the estimate; None when nothing could be shed."""
        self.system = request.system
        history = list(request.history)
        used = self.measure(history)
        new, after = self._relieve(history, used, reason="overflow")
        if new == history:
            return None
        self.last_used = after
        self._emit_context(after)
        return new

    def on_usage(self, *, message: Message, usage: Usage) -> None:
        # The loop has recorded this reply in the ledger (with the request it answered); here it is only
        # remembered and its real figure shown.
        self.remember([message])
        if message.created_at > 0:
            self._last_call_at = message.created_at
        if usage.context_tokens > 0:
            used = usage.context_tokens + usage.output_tokens
            self.last_used = used
            self._emit_context(used)

    def compact(self, *, history: Sequence[Message], focus: str) -> list[Message]:
        return self.compact_now(history, focus=focus)

    def compact_now(self, history: Sequence[Message], *, focus: str = "") -> list[Message]:
        """User-triggered compaction (`/compact [focus]`): layer 1 and layer 2 regardless of the
        threshold and the breaker. `focus` shapes this summary only; it is not kept for later turns."""
        history = list(history)
        self.remember(history)
        used = self.measure(history)
        new, after = self._relieve(history, used, reason="manual", focus=focus)
        if after >= used:
            # A manual compaction never makes the view larger: when nothing can be saved, nothing changes.
            log.info("nothing to compact: the view is %d tokens and a compaction would not make it smaller", used)
            self.stats.last_event = "nothing to compact"
            new, after = history, used
        self.last_used = after
        self._emit_context(after)
        return new

    def _fixed_tokens(self) -> int:
        # Checked before every call, and the prompt rarely changes: counted again only when it does.
        key = (self.system, tuple(self.tools), self.counter)
        if key != self._fixed[0]:
            self._fixed = (key, count_system(self.system, self.counter) + count_tools(self.tools, self.counter))
        return self._fixed[1]

    def _check_fixed(self) -> None:
        """Nothing can be sent when the system prompt and tool schemas alone are over the window: say so
        with the sizes, once, instead of compacting a history that is not the problem."""
        fixed = self._fixed_tokens()
        if fixed >= self.hard_line:
            raise PromptTooLarge(fixed_tokens=fixed, window=self.window)

    # -- measuring ------------------------------------------------------------------------------------
    def measure(self, history: Sequence[Message]) -> int:
        """TOK-1: the one context figure (anchor + estimate of what came after it)."""
        if self._measure is not None:
            return self._measure(history, self.system, self.tools)
        return self.ledger.estimate(history, self.system, self.tools)

    def remember(self, history: Sequence[Message]) -> None:
        """Keep the first-seen version of each message of the conversation (a summary the recorded agent
        wrote included; Nova's own inserts are not history). A message a repair merged is found under
        each id it was merged from, so an imported summary that names them still reads them back."""
        for m in history:
            if m.id in self.raw or m.origin is not None:
                continue
            self.raw[m.id] = m
            for merged in m.metadata.get("merged_from", ()):
                self.raw.setdefault(str(merged), m)

    # -- the pipeline ---------------------------------------------------------------------------------
    def _entry_budget(self, given: Sequence[Message]) -> list[Message]:
        """SPILL-2 for tool-result messages the model has not seen yet (decided once, then frozen).
        `given` is copied only when a message is rewritten: a call usually rewrites none, and copying
        the whole history before every call would cost as much as the rest of the call."""
        history = given if isinstance(given, list) else list(given)
        copied = history is not given
        for index in range(len(history) - 1, -1, -1):
            message = history[index]
            if message.id in self._budget_checked:
                break
            self._budget_checked.add(message.id)
            results = message.tool_results()
            if results:
                before = self.spiller.stats.spilled, self.spiller.stats.write_failures
                fitted = self.spiller.process_message(results)
                self._count_spills(before)
                if fitted != results:
                    replaced = {r.tool_use_id: r for r in fitted}
                    parts = [replaced.get(p.tool_use_id, p) if isinstance(p, ToolResultPart) else p
                             for p in message.parts]
                    if not copied:
                        history, copied = list(history), True
                    history[index] = message = message.with_parts(parts)
                    self.stats.last_event = "spill"
                    self._rewrite(message)
            cut = self._fit(message)
            if cut is not None:
                # The raw log layer 2 rebuilds from keeps the message as it was before the cut.
                if not is_nova_insert(message):
                    self.raw.setdefault(message.id, message)
                if not copied:
                    history, copied = list(history), True
                history[index] = cut
                self._rewrite(cut)
        return history

    def _fit(self, message: Message) -> Message | None:
        """One message over its share of the budget, cut in the view (head, note, tail); None when it
        fits. A message the user wrote has the larger share: it is kept whole whenever it can be."""
        if message.origin == "summary":
            # Sized by the compaction that wrote it, to its continuity floor: cutting its middle here would
            # drop the user's words and the carried rows it exists to keep (the last resort before a request
            # over the window, `_cut_largest`, still may).
            return None
        share = self.budget.message_share
        reason = ""
        size = count_message(message, self.counter)
        if is_user_message(message):
            share = self.budget.user_share
            reason = (f"a message the user wrote, of {size:,} tokens, cannot fit whole: alone it is over three "
                      f"quarters of the compaction threshold ({share:,} tokens)")
        if size <= share:
            return None
        cut = fit_message(message, share=share, counter=self.counter, save_dir=self.cut_dir,
                          transcript=self.transcript_path, reason=reason, size=size,
                          keep_person=not is_user_message(message))
        if cut is not None:
            self.stats.cuts += 1
            self.stats.last_event = self.stats.last_event or "cut"
        return cut

    def _relieve(
        self, history: list[Message], used: int, *, reason: Reason, focus: str = ""
    ) -> tuple[list[Message], int]:
        forced = reason in ("overflow", "manual")
        hard = reason == "hard" or used >= self.hard_line
        # The history as the model last saw it (plus what is new): a model summary sends this, so it
        # reads the prefix the previous call cached, whatever layer 1 cuts below.
        sent = list(history)
        # Thrash guard first: if the last compaction was only a few calls ago, summarizing again would
        # fold the same few messages; cut the outputs that refilled the window instead.
        if not forced and self._thrashing():
            history, used = self._thrash_guard(history, used)
            if used < self.threshold:
                return history, used
        # Layer 1 (runs even with the breaker open).
        snip = snip_old_tool_results(history, config=self.config, output_dir=self.output_dir,
                                     counter=self.counter, budget_tokens=self.budget.snip_budget,
                                     on_rewrite=self._rewrite)
        if snip.rewritten:
            history = snip.messages
            self.stats.snips += snip.parts_snipped
            self.stats.last_event = "snip"
            self.ledger.clear()  # the anchor counted the uncut text
            used = self.measure(history)
        self.stats.snip_failures += snip.write_failures
        if used < self.threshold and not forced:
            return history, used
        # Layer 2.
        if self.stats.breaker_open and not (hard or forced):
            log.info("context at %d tokens (threshold %d) but the compaction breaker is open", used, self.threshold)
        else:
            history, used = self._layer2(history, used, reason=reason, forced=forced or hard, focus=focus,
                                         sent=sent)
        # Last resort: nothing may keep a request above the window.
        if used >= self.hard_line or (forced and used >= self.threshold):
            history, used = self._emergency_snip(history, used)
        if used >= self.hard_line:
            history, used = self._cut_largest(history, used)
        return history, used

    def _cut_largest(self, history: list[Message], used: int) -> tuple[list[Message], int]:
        """Still over the hard line (a small window, a long summary of the user's words): cut the largest
        messages of the view, the user's too, each saying so, until the request fits."""
        sizes = list(map(message_size(self.counter), history))
        over = used - (self.hard_line - 1)
        out = list(history)
        for i in sorted(range(len(out)), key=lambda k: sizes[k], reverse=True):
            if over <= 0:
                break
            share = max(64, sizes[i] - over)
            cut = fit_message(out[i], share=share, counter=self.counter, save_dir=self.cut_dir,
                              transcript=self.transcript_path, size=sizes[i], original=self.raw.get(out[i].id),
                              reason=f"cut so the request fits the {self.window:,}-token window", force=True)
            if cut is None:
                continue
            over -= sizes[i] - count_message(cut, self.counter)
            out[i] = cut
            self._rewrite(cut)
            self.stats.cuts += 1
        if out == history:
            return history, used
        self.ledger.clear()
        return out, self.measure(out)

    def _layer2(
        self, history: list[Message], used: int, *, reason: Reason, forced: bool, focus: str,
        sent: Sequence[Message] = (), target: int | None = None, budget: ContextBudget | None = None,
    ) -> tuple[list[Message], int]:
        started_at = time.monotonic()
        started = False

        def on_start(message_count: int, token_count: int) -> None:
            nonlocal started
            started = True
            self.bus.emit(ev.CompactionStart(session_id=self.session_id, message_count=message_count,
                                             token_count=used, reason=reason))

        skills = list(self.skills()) if self.skills else []
        outcome = compact(
            history, summarizer=self.summarizer, budget=budget or self.budget, counter=self.counter,
            system=self.system, tools=self.tools, forced=forced, focus=focus,
            transcript_path=self.transcript_path, raw_lookup=self.raw.get,
            restore=RestoreContext(tools=self.tools, skills=skills, read_file=self.read_file),
            on_start=on_start, context=sent, fixed_tokens=self._view_overhead(history, used),
            save_dir=self.cut_dir, target=target,
        )
        if outcome.status == "skipped":
            self.stats.compaction_skips += 1
            log.debug("compaction skipped: %s", outcome.reason)
            return history, used
        if not outcome.ok:
            self.stats.compaction_failures += 1
            self.stats.consecutive_failures += 1
            limit = self.config.max_consecutive_failures
            if limit > 0 and self.stats.consecutive_failures >= limit and not self.stats.breaker_open:
                self.stats.breaker_open = True
                self.stats.breaker_trips += 1
                log.warning("compaction failed %d times in a row; the breaker is open (layer 1 still runs)",
                            self.stats.consecutive_failures)
            if started:
                self.bus.emit(ev.CompactionEnd(session_id=self.session_id, ok=False, tokens_before=used,
                                               tokens_after=used, duration_s=time.monotonic() - started_at,
                                               error=outcome.reason))
            return history, used
        anchor = self.ledger.anchor
        self.ledger.clear()  # TOK-2: no real figure until the next call
        new_history = outcome.messages
        after = self.measure(new_history)
        if reason == "manual" and after >= used:
            # `/compact` never makes the view larger (a short conversation's summary, with the user's words
            # and the restored files, can outweigh it): the summary is dropped before anything records it.
            self.ledger.restore(anchor)
            if started:
                self.bus.emit(ev.CompactionEnd(
                    session_id=self.session_id, ok=False, declined=True, tokens_before=used, tokens_after=used,
                    duration_s=time.monotonic() - started_at,
                    error=f"the summary would not make the view smaller ({used:,} → {after:,} tokens); "
                          "nothing changed"))
            return history, used
        self.stats.compactions += 1
        self._cost_failed_at = None
        self.stats.consecutive_failures = 0
        self.stats.breaker_open = False
        self.stats.last_event = "compaction"
        self._last_compaction_call = self.stats.calls
        self._last_after = after
        receipt = self._receipt(outcome, tokens_before=used, tokens_after=after)
        # The first call that is sent the compacted view: this one, or the next for `/compact`.
        self.receipts.append((self.stats.calls + (reason == "manual"), receipt))
        self._record_compaction(outcome, reason=reason, tokens_before=used, tokens_after=after, receipt=receipt)
        self.bus.emit(ev.CompactionEnd(
            session_id=self.session_id, ok=True, tokens_before=used, tokens_after=after,
            messages_compacted=len(outcome.compacted_ids), duration_s=time.monotonic() - started_at,
            receipt=receipt.to_json(), receipt_text=receipt_line(receipt),
        ))
        if self.on_compacted is not None:
            self.on_compacted(outcome)
        return new_history, after

    def _receipt(self, outcome: CompactionOutcome, *, tokens_before: int, tokens_after: int) -> CompactionReceipt:
        """What this compaction cost and saves (nova.context.receipt). An extractive summary makes no
        model call; a model summary reads the view as last sent and writes the summary's body (the rest
        of the summary message, the user's words, carried rows and restored files, Nova adds itself)."""
        written = outcome.written
        model_call = self.summarizer.model_call
        return compaction_receipt(tokens_before=tokens_before, tokens_after=tokens_after,
                                  summary_input_tokens=tokens_before if model_call else 0,
                                  summary_output_tokens=written if model_call else 0, prices=self.prices,
                                  kept_prefix_tokens=self._fixed_tokens() + outcome.pinned_tokens)

    def _pinned_tokens(self, history: Sequence[Message]) -> int:
        """The opening message a compaction would keep where it is (`pinned_opening`): still cached after it."""
        return sum(map(message_size(self.counter), pinned_opening(history, budget=self.budget, counter=self.counter)))

    def _view_overhead(self, history: Sequence[Message], used: int) -> int:
        """What the view holds besides the history: system prompt, tools, and what the compiler adds
        (pinned task state, observations). A compaction sizes the new view with it."""
        fixed = self._fixed_tokens()
        if self._measure is None:
            return fixed
        return max(fixed, used - self._history_tokens(history))

    def _history_tokens(self, history: Sequence[Message]) -> int:
        """The history's messages counted alone, asked on every call below the soft line: only what changed
        since the last call is counted (a long session's history is counted once, not on every call)."""
        if self._summed_with is not self.counter:
            self._summed, self._running, self._summed_with = [], [0], self.counter
        shared = follow(self._summed, history)
        del self._running[shared + 1:]
        total = self._running[-1]
        size = message_size(self.counter)
        for m in self._summed[shared:]:
            total += size(m)
            self._running.append(total)
        return total

    def _thrashing(self) -> bool:
        last = self._last_compaction_call
        return last is not None and self.stats.calls - last <= THRASH_CALLS

    def _thrash_guard(self, history: list[Message], used: int) -> tuple[list[Message], int]:
        """Name the tool outputs that refilled the window and cut them (keeping the newest message)."""
        culprits = _largest_outputs(history, self.counter)[:3]
        names = [f"{name} {use_id} ({tokens:,} tokens)" for name, use_id, tokens in culprits]
        self.stats.thrash_events += 1
        self.stats.thrash_culprits.extend(names)
        log.warning("context refilled %d calls after a compaction; cutting the largest tool outputs: %s",
                    self.stats.calls - (self._last_compaction_call or 0), ", ".join(names) or "none")
        budget = self.budget.keep_tokens // 4
        return self._snip_with(history, used, preserve_last=1, budget=budget)

    def _emergency_snip(self, history: list[Message], used: int) -> tuple[list[Message], int]:
        """Over the hard line even after both layers: cut every cuttable output, newest included."""
        history, used = self._snip_with(history, used, preserve_last=1, budget=0)
        if used >= self.hard_line:
            history, used = self._snip_with(history, used, preserve_last=0, budget=0)
        return history, used

    def _snip_with(self, history: list[Message], used: int, *, preserve_last: int, budget: int
                   ) -> tuple[list[Message], int]:
        snip = snip_old_tool_results(history, config=self.config, output_dir=self.output_dir,
                                     counter=self.counter, preserve_last=preserve_last, budget_tokens=budget,
                                     on_rewrite=self._rewrite)
        self.stats.snip_failures += snip.write_failures
        if not snip.rewritten:
            return history, used
        self.stats.snips += snip.parts_snipped
        self.stats.last_event = self.stats.last_event or "snip"
        self.ledger.clear()
        return snip.messages, self.measure(snip.messages)

    # -- recording ------------------------------------------------------------------------------------
    def _count_spills(self, before: tuple[int, int]) -> None:
        spilled = self.spiller.stats.spilled - before[0]
        if spilled:
            self.stats.spills += spilled
            self.stats.last_event = self.stats.last_event or "spill"
        self.stats.spill_failures += self.spiller.stats.write_failures - before[1]

    def _rewrite(self, message: Message) -> None:
        if self.recorder is None:
            return
        try:
            self.recorder.update_message_content(message.id, message)
        except Exception:  # the record must not break the turn; the raw transcript still has everything
            log.exception("session record: update_message_content failed")

    def _record_compaction(self, outcome: CompactionOutcome, *, reason: str, tokens_before: int,
                           tokens_after: int, receipt: CompactionReceipt | None = None) -> None:
        """The boundary record carries the new head of history; the recorder flags the covered messages
        compacted."""
        if self.recorder is None:
            return
        summary = outcome.summary
        boundary = BoundaryRecord(
            id="", summary=summary.text if summary else "", trigger=reason, tokens_before=tokens_before,
            tokens_after=tokens_after, duration_ms=outcome.duration_s * 1000.0,
            covers=tuple(outcome.compacted_ids), messages=tuple(outcome.messages),
            receipt=receipt.to_json() if receipt is not None else None,
        )
        try:
            self.recorder.record_compact_boundary(boundary)
        except Exception:  # as above: a failed record must not fail the compaction
            log.exception("session record: record_compact_boundary failed")

    def _emit_context(self, used: int) -> None:
        self.bus.emit(ev.ContextUpdate(session_id=self.session_id, used=used, limit=self.threshold,
                                       window=self.window, percent=context_percent(used, self.threshold)))


def _largest_outputs(history: Sequence[Message], counter: TokenCounter) -> list[tuple[str, str, int]]:
    names = {u.id: u.name for m in history for u in m.tool_uses()}
    sized = [(names.get(r.tool_use_id, "tool"), r.tool_use_id, counter.count(r.content))
             for m in history for r in m.tool_results()]
    return sorted(sized, key=lambda item: item[2], reverse=True)

