"""Unit tests for every number and rule of spill (SPILL-1..5) and compaction (CMP-1..8, CMP-11)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from nova import events as ev
from nova.context.budget import ContextBudget
from nova.context.compaction import (
    MIN_FOLD_TOKENS,
    SUMMARY_HEADER,
    compact,
    find_split_point,
    is_snipped,
    pinned_opening,
    snip_old_tool_results,
    snip_text,
)
from nova.context.extensions import ViewRequest
from nova.context.spill import Spiller, is_placeholder
from nova.context.summarize import USER_SECTION, ExtractiveSummarizer, SummaryRequest
from nova.history.invariants import check_tool_pairing
from nova.messages import Message, TextPart, ThinkingPart, ToolResultPart, ToolUsePart
from nova.model import CallPurpose, Usage
from nova.providers.base import assistant_message
from nova.sessions.recorder import BoundaryRecord
from nova.settings import CompactionConfig, SpillConfig
from nova.tokens import HeuristicCounter

from .helpers import exchange, filler, history, make_controller, of_type, small_config

COUNTER = HeuristicCounter()


def use(i: int, name: str = "bash", **inp: object) -> ToolUsePart:
    return ToolUsePart(id=f"t{i}", name=name, input=inp or {"command": "ls"})


# -- spill -----------------------------------------------------------------------------------------
def test_spill_per_result_limit_and_placeholder(tmp_path: Path) -> None:
    spiller = Spiller(session_dir=tmp_path)
    small = ToolResultPart("t1", "x" * 50_000)
    assert spiller.process_result(use(1), small) is small  # exactly at the limit stays
    big = ToolResultPart("t2", "y" * 50_001)
    out = spiller.process_result(use(2), big)
    assert is_placeholder(out.content)
    path = tmp_path / "tool-results" / "t2.txt"
    assert path.read_text() == big.content
    assert str(path) in out.content and "50,001 characters" in out.content
    assert "y" * 2000 in out.content and "y" * 2001 not in out.content  # the 2,000-char preview
    assert spiller.stats.spilled == 1


def test_spill_message_budget_largest_first(tmp_path: Path) -> None:
    spiller = Spiller(session_dir=tmp_path)
    results = [ToolResultPart(f"t{i}", "z" * size) for i, size in enumerate([45_000, 49_000, 48_000, 47_000, 30_000])]
    out = spiller.process_message(results)
    spilled = [r.tool_use_id for r in out if is_placeholder(r.content)]
    assert spilled == ["t1"]  # 219,000 → the largest (49,000) goes; 172,000 is within 200,000
    assert sum(len(r.content) for r in out) <= 200_000


def test_spill_reread_exempt_and_write_failure_exempt(tmp_path: Path) -> None:
    spiller = Spiller(session_dir=tmp_path)
    reread = use(1, "read_file", path=str(tmp_path / "tool-results" / "t0.txt"))
    result = ToolResultPart("t1", "r" * 80_000)
    assert spiller.process_result(reread, result) is result  # SPILL-3
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where a directory should be")
    bad = Spiller(session_dir=blocked)
    huge = ToolResultPart("t9", "q" * 60_000)
    assert bad.process_result(use(9), huge) is huge  # kept whole: nothing lost
    assert bad.stats.write_failures == 1 and bad.stats.failed_ids == ["t9"]
    assert bad.process_message([huge, ToolResultPart("t8", "w" * 150_000)])[0] is huge  # never retried


def test_spill_limits_are_configuration(tmp_path: Path) -> None:
    spiller = Spiller(config=SpillConfig(max_result_chars=100, preview_chars=10), session_dir=tmp_path)
    out = spiller.process_result(use(1), ToolResultPart("t1", "abcdefghijklmnop" * 10))
    assert "abcdefghij\n" in out.content and "abcdefghijk" not in out.content


# -- layer 1 ---------------------------------------------------------------------------------------
def test_snip_text_head_quarter_tail_three_quarters() -> None:
    text = "".join(chr(65 + i % 26) for i in range(10_000))
    cut = snip_text(text, max_chars=2000, path="/p/x.txt")
    assert cut.startswith(text[:500] + "\n[... 8000 chars snipped ... Full output: /p/x.txt]")
    assert cut.endswith("\n" + text[-1500:])
    assert is_snipped(cut)


def test_snip_budget_walk_preserve_tail_and_files(tmp_path: Path) -> None:
    msgs = history(6, output_chars=4000)  # each output ~ 800 tokens
    # preserved tail: the newest output (its tokens count against the budget); the next fits what is left
    config = CompactionConfig(snip_preserve_last_n_messages=2, snip_tool_output_token_budget=2000)
    out_dir = tmp_path / "tool-output"
    rewritten: list[Message] = []
    result = snip_old_tool_results(msgs, config=config, output_dir=out_dir, counter=COUNTER,
                                   on_rewrite=rewritten.append)
    outputs = [m for m in result.messages if m.has("tool_result")]
    # newest output is in the preserved tail; the next fits the budget; older ones are cut
    assert not is_snipped(outputs[-1].tool_results()[0].content)
    assert not is_snipped(outputs[-2].tool_results()[0].content)
    assert all(is_snipped(m.tool_results()[0].content) for m in outputs[:-2])
    assert [m.id for m in rewritten] == list(result.rewritten)
    for m in outputs[:-2]:
        original = next(o for o in msgs if o.id == m.id)
        assert (out_dir / f"{m.id}.txt").read_text() == original.tool_results()[0].content
    again = snip_old_tool_results(result.messages, config=config, output_dir=out_dir, counter=COUNTER)
    assert not again.rewritten  # idempotent


def test_snip_leaves_short_outputs_and_placeholders(tmp_path: Path) -> None:
    msgs = history(5, output_chars=1900)  # under snip_max_chars
    config = CompactionConfig(snip_preserve_last_n_messages=0, snip_tool_output_token_budget=0)
    assert not snip_old_tool_results(msgs, config=config, output_dir=tmp_path, counter=COUNTER).rewritten
    placeholder = Spiller(session_dir=tmp_path).process_result(use(1), ToolResultPart("t1", "p" * 60_000))
    frozen = [assistant_message("", [use(1)]), Message(role="user", parts=(placeholder,))]
    assert not snip_old_tool_results(frozen, config=config, output_dir=tmp_path, counter=COUNTER).rewritten


def test_snip_old_oversized_tool_use_input(tmp_path: Path) -> None:
    write = ToolUsePart(id="w1", name="write_file", input={"path": "big.py", "content": "c" * 30_000})
    msgs = [Message.user("write it"), assistant_message("", [write]),
            Message(role="user", parts=(ToolResultPart("w1", "ok"),)), *history(3)[1:]]
    config = CompactionConfig(snip_preserve_last_n_messages=2, snip_tool_output_token_budget=0)
    result = snip_old_tool_results(msgs, config=config, output_dir=tmp_path, counter=COUNTER)
    cut = result.messages[1].tool_uses()[0]
    assert cut.input["path"] == "big.py" and is_snipped(cut.input["content"])
    assert len(cut.input["content"]) < 2200


def test_layer1_runs_only_over_threshold_prefix_byte_stable(tmp_path: Path) -> None:
    controller, _ = make_controller(tmp_path, window=200_000, config=small_config())
    msgs = history(10, output_chars=6000)
    view = controller.prepare_view(request=ViewRequest(history=msgs, system="s"))
    assert view == msgs and controller.stats.snips == 0  # under threshold: untouched


# -- layer 2 ---------------------------------------------------------------------------------------
def test_thresholds_and_keep_budget_numbers() -> None:
    c = CompactionConfig()
    # The seeds' numbers hold at 200k and above; below, they scale with the window.
    at200 = ContextBudget.derive(c, 200_000)
    assert (at200.threshold, at200.keep_tokens, at200.summary_cap, at200.hard_line) == (176_000, 20_000, 4000, 197_000)
    assert ContextBudget.derive(c, 1_000_000).keep_tokens == 20_000
    assert ContextBudget.derive(c, 128_000).threshold == 128_000 - 15_360
    assert ContextBudget.derive(c, 32_000).threshold == 28_160
    assert ContextBudget.derive(c, 32_000).keep_tokens == 3_200
    assert ContextBudget.derive(c, 32_000).spill.max_result_chars == 8_000
    # A configured kept tail keeps the seed's clamps, scaled: floor 10k and ceiling 40k at 200k.
    assert ContextBudget.derive(CompactionConfig(summary_keep_tokens=2000), 200_000).keep_tokens == 10_000  # floor
    assert ContextBudget.derive(CompactionConfig(summary_keep_tokens=90_000), 1_000_000).keep_tokens == 40_000  # ceiling
    for window in (4_000, 8_000, 16_000, 64_000, 1_000_000):
        b = ContextBudget.derive(c, window)
        assert 0 < b.keep_tokens <= b.threshold // 4 < b.threshold < b.hard_line <= b.window
        assert b.reserve <= window // 2 and not b.warnings


def test_a_configured_value_that_cannot_work_is_clamped_with_a_warning() -> None:
    warned: list[str] = []
    config = CompactionConfig(summary_keep_tokens=30_000, hard_margin_tokens=6_000)
    b = ContextBudget.derive(config, 8_000, warn=warned.append)
    assert b.keep_tokens <= b.threshold // 4 and b.hard_line > b.threshold
    assert any(w.startswith("compaction.summary_keep_tokens = 30,000 cannot work with a 8,000-token window") for w in warned)
    assert any(w.startswith("compaction.hard_margin_tokens = 6,000") for w in warned)
    assert ContextBudget.derive(config, 200_000, warn=warned.append).keep_tokens == 30_000  # honoured where it works


def test_split_never_separates_tool_use_from_result() -> None:
    msgs = history(10, output_chars=2000)
    for keep in range(0, 6000, 250):
        split = find_split_point(msgs, keep_tokens=keep, counter=COUNTER)
        assert split == 0 or not msgs[split].has("tool_result")
        assert len(msgs) - split >= 5 or split == 0


def test_split_never_cuts_a_thinking_loop() -> None:
    msgs: list[Message] = [Message.user("go")]
    for i in range(8):
        parts = (ThinkingPart("hmm", signature="s"), use(i)) if i == 0 else (use(i),)
        msgs += [Message(role="assistant", parts=parts), Message(role="user", parts=(ToolResultPart(f"t{i}", "o" * 900),))]
    loop_end = len(msgs)
    msgs += [Message.user("next"), *history(3)[1:]]
    for keep in range(0, 8000, 200):
        split = find_split_point(msgs, keep_tokens=keep, counter=COUNTER)
        assert not 1 < split < loop_end  # the thinking loop is kept or folded whole


def test_compact_skip_rules(tmp_path: Path) -> None:
    config = CompactionConfig()
    summarizer = ExtractiveSummarizer()
    short = history(2, output_chars=200)
    out = compact(short, summarizer=summarizer, budget=ContextBudget.derive(config, 128_000), counter=COUNTER)
    assert out.status == "skipped"
    tiny = history(20, output_chars=200)  # foldable part under 2,000 tokens
    out = compact(tiny, summarizer=summarizer, budget=ContextBudget.derive(CompactionConfig(summary_keep_tokens=1024), 20_000),
                  counter=COUNTER)
    assert out.status == "skipped" and str(MIN_FOLD_TOKENS) in out.reason
    forced = compact(tiny, summarizer=summarizer, budget=ContextBudget.derive(config, 8_000), counter=COUNTER, forced=True)
    assert forced.status == "compacted"


def test_compact_result_shape_and_user_messages_verbatim() -> None:
    msgs = history(30, output_chars=3000, first="Fix parser.py. Constraint: never touch api.py!")
    out = compact(msgs, summarizer=ExtractiveSummarizer(), budget=ContextBudget.derive(CompactionConfig(), 32_000),
                  counter=COUNTER, transcript_path="/s/transcript.jsonl")
    assert out.ok
    opening, summary = out.messages[:2]
    # The task statement stays where it was, word for word, ahead of the summary of what followed it.
    assert opening is msgs[0] and opening.text == "Fix parser.py. Constraint: never touch api.py!"
    assert summary.has("summary") and summary.text.startswith(SUMMARY_HEADER)
    assert USER_SECTION in summary.text and "/s/transcript.jsonl" in summary.text
    # Folded: everything between the opening message and the kept tail.
    assert set(out.compacted_ids) == {m.id for m in msgs[1: len(msgs) - len(out.messages) + 2]}
    assert not check_tool_pairing(out.messages)
    # fold again: the earlier summary is folded, the user message still verbatim, covers accumulate
    more = out.messages + history(30, output_chars=3000)[1:]
    raw = {m.id: m for m in msgs + more if not m.has("summary")}
    again = compact(more, summarizer=ExtractiveSummarizer(), budget=ContextBudget.derive(CompactionConfig(), 32_000),
                    counter=COUNTER, raw_lookup=raw.get)
    assert again.ok and again.messages[0] is msgs[0] and again.messages[1].has("summary")
    covers = again.messages[1].parts[0].covers  # type: ignore[union-attr]
    assert set(summary.parts[0].covers) <= set(covers)  # type: ignore[union-attr]


class Huge:
    name = "huge"
    model_call = True  # stands for a model summary

    def summarize(self, request: SummaryRequest) -> str:
        return "word " * (request.max_tokens * 3)


def test_an_opening_message_over_a_third_of_the_threshold_is_folded_with_the_rest() -> None:
    budget = ContextBudget.derive(CompactionConfig(), 32_000)
    small = history(30, output_chars=3000, first="Fix parser.py; keep the API.")
    assert pinned_opening(small, budget=budget, counter=COUNTER) == [small[0]]
    # A pasted log as the first message: keeping it whole would leave the next views little room, so it
    # goes into the summary's user section (cut there if it must be) like any later message.
    pasted = "Fix parser.py; the log: " + " ".join(f"line{i} failed at step {i}" for i in range(3000))
    large = history(30, output_chars=3000, first=pasted)
    assert COUNTER.count(pasted) > budget.threshold // 3
    assert pinned_opening(large, budget=budget, counter=COUNTER) == []
    out = compact(large, summarizer=ExtractiveSummarizer(), budget=budget, counter=COUNTER)
    assert out.ok and out.messages[0].has("summary") and large[0].id in out.compacted_ids
    # Nor a first message that also holds what a harness put there (Claude Code's caveat before a local
    # command's output): only the person's words of it go on, in the user section.
    caveat = Message(role="user", parts=(TextPart("Caveat: the messages below were generated by a local command.",
                                                  harness=True), TextPart("Fix parser.py; keep the API.")))
    assert pinned_opening([caveat, *small[1:]], budget=budget, counter=COUNTER) == []
    # Nor is a summary Nova wrote ever pinned: the next compaction folds it.
    assert pinned_opening([out.messages[0], *large[1:]], budget=budget, counter=COUNTER) == []


def test_summary_over_cap_is_rejected() -> None:
    msgs = history(30, output_chars=3000)
    out = compact(msgs, summarizer=Huge(), budget=ContextBudget.derive(CompactionConfig(), 32_000), counter=COUNTER)
    assert out.status == "failed" and "cap" in out.reason and out.messages == msgs


# -- controller: triggers and events ---------------------------------------------------------------
def test_context_update_limit_is_threshold_and_anchor(tmp_path: Path) -> None:
    controller, seen = make_controller(tmp_path, window=100_000)
    msgs = history(2)
    controller.on_usage(message=msgs[-1], usage=Usage(input_tokens=40_000, output_tokens=100))
    update = of_type(seen, ev.ContextUpdate)[-1]
    assert update.limit == controller.threshold == 76_000
    assert update.used == 40_100 and update.percent == round(40_100 * 100 / 76_000, 1)


def test_soft_trigger_compacts_and_emits_events(tmp_path: Path) -> None:
    controller, seen = make_controller(tmp_path, window=20_000)
    msgs = history(40, output_chars=1200)
    view = controller.prepare_view(request=ViewRequest(history=msgs, system="s"))
    starts, ends = of_type(seen, ev.CompactionStart), of_type(seen, ev.CompactionEnd)
    assert [s.reason for s in starts] == ["threshold"] and ends[-1].ok
    assert ends[-1].tokens_after < ends[-1].tokens_before and starts[0].message_count == len(msgs)
    assert view[0] is msgs[0] and view[1].has("summary") and controller.stats.compactions == 1
    assert of_type(seen, ev.ContextUpdate)[-1].used < controller.threshold
    assert controller.ledger.anchor is None


def test_breaker_zero_means_never(tmp_path: Path) -> None:
    from .test_faults import FailingSummarizer

    failing = FailingSummarizer()
    controller, _ = make_controller(tmp_path, window=20_000, summarizer=failing,
                                    config=small_config(max_consecutive_failures=0))
    msgs = history(40, output_chars=1200)
    for _ in range(5):
        controller.prepare_view(request=ViewRequest(history=msgs, system="s"))
    assert failing.calls == 5 and not controller.stats.breaker_open


def test_thrash_guard_names_culprits_and_never_loops(tmp_path: Path) -> None:
    controller, _ = make_controller(tmp_path, window=20_000)
    msgs = controller.prepare_view(request=ViewRequest(history=history(40, output_chars=1200), system="s"))
    assert controller.stats.compactions == 1
    # Refills the window right away (each output under the spill limit and its share of the budget).
    msgs = msgs + [m for k in range(8) for m in exchange(100 + k, output_chars=4_500)]
    msgs = controller.prepare_view(request=ViewRequest(history=msgs, system="s"))
    assert controller.stats.thrash_events == 1
    assert any("toolu_010" in c for c in controller.stats.thrash_culprits)
    assert controller.measure(msgs) < controller.hard_line


def test_recorder_gets_snips_and_boundary(tmp_path: Path) -> None:
    class Recorder:
        def __init__(self) -> None:
            self.updated: list[str] = []
            self.boundaries: list[BoundaryRecord] = []

        def record_message(self, message: Message, usage: Usage | None = None) -> None: ...

        def record_event(self, name: str, data: Mapping[str, Any]) -> None: ...

        def add_cost(self, usage: Usage, cost_usd: float | None, purpose: CallPurpose = "turn", *,
                     calls: int = 1) -> None: ...

        def note_context_size(self, tokens: int) -> None: ...

        def flush(self) -> None: ...

        def update_message_content(self, message_id: str, message: Message) -> None:
            self.updated.append(message_id)

        def record_compact_boundary(self, boundary: BoundaryRecord) -> str:
            self.boundaries.append(boundary)
            return "cmp_1"

    recorder = Recorder()
    controller, _ = make_controller(tmp_path, window=20_000, recorder=recorder)
    controller.prepare_view(request=ViewRequest(history=history(12, output_chars=6000), system="s"))
    assert recorder.updated  # layer 1 alone was enough here
    controller.prepare_view(request=ViewRequest(history=history(40, output_chars=1200), system="s"))
    assert len(recorder.boundaries) == 1
    boundary = recorder.boundaries[0]
    assert boundary.trigger == "threshold" and boundary.covers and boundary.summary
    assert boundary.tokens_after < boundary.tokens_before
    assert boundary.messages[1].has("summary")  # the new history after the opening message, for resume


def test_manual_compact_with_focus_does_not_leak(tmp_path: Path) -> None:
    controller, _ = make_controller(tmp_path, window=200_000)
    msgs = history(30, output_chars=3000)
    view = controller.compact_now(msgs, focus="the parser bug")
    assert view[1].has("summary") and "the parser bug" in view[1].text
    later = controller.compact_now(view + history(30, output_chars=3000)[1:])
    assert "the parser bug" not in later[1].text


@pytest.mark.parametrize("key,value", [
    ("snip_max_chars", 400), ("snip_tool_output_token_budget", 0), ("snip_preserve_last_n_messages", 0)])
def test_snip_keys_change_what_is_cut(tmp_path: Path, key: str, value: int) -> None:
    msgs = history(6, output_chars=1500)
    base = CompactionConfig(snip_preserve_last_n_messages=2, snip_tool_output_token_budget=0, snip_max_chars=2000)
    before = snip_old_tool_results(msgs, config=base, output_dir=tmp_path, counter=COUNTER).parts_snipped
    changed = CompactionConfig(**{**{"snip_preserve_last_n_messages": 2, "snip_tool_output_token_budget": 0,
                                     "snip_max_chars": 400}, key: value})
    after = snip_old_tool_results(msgs, config=changed, output_dir=tmp_path / "b", counter=COUNTER).parts_snipped
    assert after > before


def test_reserve_keys_move_the_threshold() -> None:
    config = CompactionConfig(output_reserve_tokens=1000, summary_reserve_tokens=1000)
    assert ContextBudget.derive(config, 100_000).threshold == 98_000
    assert ContextBudget.derive(CompactionConfig(hard_margin_tokens=5000), 100_000).hard_line == 95_000


def test_filler_is_deterministic() -> None:
    assert filler(100, 3) == filler(100, 3) and len(filler(1234, 9)) == 1234
