"""The receipt of a compaction (nova.context.receipt): its figures by hand, the same figures on the CLI
line, the event, the boundary record and the replay JSON."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from nova import events as ev
from nova.cli.render import Timeline
from nova.context.budget import ContextBudget
from nova.context.controller import ContextController, FixedPrompt
from nova.context.economy import CachePrices, prices_for
from nova.context.extensions import ViewRequest
from nova.context.receipt import CompactionReceipt, compaction_receipt, receipt_line
from nova.evaluation.replay import settled_receipts
from nova.messages import Message, ToolResultPart, ToolUsePart
from nova.sessions.link import SessionLink
from nova.settings import CompactionConfig
from nova.tokens import MemoCounter, TokenLedger
from nova.tokens.counters import CL100K_PROFILE, HeuristicCounter

COUNTER = HeuristicCounter(CL100K_PROFILE)


def _reads(task: str, calls: int, *, path: str, line: str, repeat: int) -> list[Message]:
    """A task, then `calls` bash reads of a file each (`path` and `line` formatted with the call's number),
    then a closing reply: a run that grows steadily, one second a call."""
    messages = [Message.user(task, id="task")]
    for i in range(calls):
        call = ToolUsePart(id=f"call{i}", name="bash", input={"command": f"cat {path.format(i)}"})
        messages.append(Message(role="assistant", parts=(call,), id=f"a{i}", created_at=1000.0 + i))
        messages.append(Message(role="user", parts=(ToolResultPart(f"call{i}", line.format(i) * repeat),),
                                id=f"r{i}", created_at=1000.5 + i))
    messages.append(Message.assistant("Done.", id="final", created_at=2000.0))
    return messages


def test_figures_by_hand_at_claude_sonnet_prices() -> None:
    # claude-sonnet-4-5: input $3/M, read 0.1x, write 1.25x, output 5x.
    prices = prices_for("claude-sonnet-4-5")
    receipt = compaction_receipt(tokens_before=100_000, tokens_after=20_000, summary_input_tokens=100_000,
                                 summary_output_tokens=2_000, prices=prices)
    # summary: 100,000 * 0.1 + 2,000 * 5 = 20,000 units; rewrite: 20,000 * (1.25 - 0.1) = 23,000 units;
    # saving: 80,000 * 0.1 = 8,000 units a call; break-even: ceil(43,000 / 8,000) = 6 calls.
    assert abs(receipt.summary_cost - 20_000) < 1e-6
    assert abs(receipt.rewrite_cost - 23_000) < 1e-6
    assert abs(receipt.saving_per_call - 8_000) < 1e-6
    assert receipt.break_even_calls == 6
    data = receipt.to_json()
    assert data["summary_cost_usd"] == 0.06 and data["rewrite_cost_usd"] == 0.069
    assert data["saving_per_call_usd"] == 0.024
    # Ten calls followed: 10 * 8,000 - 43,000 = 37,000 units = $0.111.
    settled = receipt.settled(10)
    assert settled.to_json()["realised_saving_usd"] == 0.111
    assert "saved $0.1110 over the 10 calls after it" in receipt_line(settled)
    # Four calls: it had not paid for itself.
    assert "lost $0.0330 over the 4 calls after it" in receipt_line(receipt.settled(4))


def test_an_extractive_summary_costs_nothing_and_an_unpriced_model_speaks_in_tokens() -> None:
    receipt = compaction_receipt(tokens_before=50_000, tokens_after=10_000, summary_input_tokens=0,
                                 summary_output_tokens=0, prices=CachePrices())
    assert receipt.summary_cost == 0 and receipt.break_even_calls == 3  # 11,500 / 4,000
    assert receipt.to_json()["summary_cost_usd"] is None
    assert "cache rewrite 11,500 input-token equivalents" in receipt_line(receipt)
    none = compaction_receipt(tokens_before=10_000, tokens_after=10_000, summary_input_tokens=0,
                              summary_output_tokens=0, prices=CachePrices())
    assert none.break_even_calls is None and "never pays off" in receipt_line(none)


def test_a_receipt_reads_back_to_the_same_words() -> None:
    receipt = compaction_receipt(tokens_before=123_457, tokens_after=31_234, summary_input_tokens=123_457,
                                 summary_output_tokens=1_777, prices=prices_for("claude-opus-4-6")).settled(7)
    assert receipt_line(CompactionReceipt.from_json(receipt.to_json())) == receipt_line(receipt)


def test_replay_settles_each_receipt_with_the_calls_it_served() -> None:
    receipt = compaction_receipt(tokens_before=1_000, tokens_after=100, summary_input_tokens=0,
                                 summary_output_tokens=0, prices=CachePrices())
    settled = settled_receipts([(3, receipt), (8, receipt), (13, receipt)], calls=12)
    # Calls 3..7, 8..12, and none for a compaction of the final (never sent) view.
    assert [r.calls_after for r in settled] == [5, 5, 0]


def test_the_cli_line_the_event_and_the_boundary_show_the_same_figures(tmp_path: Path) -> None:
    budget = ContextBudget.derive(CompactionConfig(), 32_000)
    bus = ev.EventBus()
    ended: list[ev.CompactionEnd] = []
    bus.subscribe(lambda e: ended.append(e) if isinstance(e, ev.CompactionEnd) else None)
    out = io.StringIO()
    bus.subscribe(Timeline(Console(file=out, width=400, color_system=None)))
    controller = ContextController(budget=budget, ledger=TokenLedger(MemoCounter(COUNTER)),
                                   session=SessionLink(dir=tmp_path / "session", bus=bus),
                                   prompt=FixedPrompt(system="You are a coding agent."),
                                   prices=prices_for("claude-sonnet-4-5"))
    history: list[Message] = [Message.user("Fix the failing date parser in utils/dates.py; keep the API.")]
    for i in range(40):
        history = controller.prepare_view(request=ViewRequest(history=history, system=controller.system))
        use = ToolUsePart(f"t{i}", "read_file", {"path": f"src/mod{i}.py"})
        body = "\n".join(f"line {i}.{k}: value = compute_{k}(x, y)  # step {k}" for k in range(150))
        history = [*history, Message(role="assistant", parts=(use,)),
                   Message(role="user", parts=(ToolResultPart(f"t{i}", body),))]
    done = [e for e in ended if e.ok]
    assert done and len(controller.receipts) == len(done)
    for event, (_, receipt) in zip(done, controller.receipts, strict=True):
        assert event.receipt == receipt.to_json()
        assert event.receipt["tokens_before"] == event.tokens_before
        assert event.receipt["tokens_after"] == event.tokens_after
        assert event.receipt_text == receipt_line(receipt)
        assert receipt_line(CompactionReceipt.from_json(event.receipt)) in out.getvalue()
        assert "$" in event.receipt_text  # priced at the model's rates


def test_replay_json_and_text_carry_the_settled_receipt() -> None:
    from nova.evaluation.replay import replay_messages
    from nova.model import ToolSpec

    tools = (ToolSpec(name="bash", description="Run a shell command.",
                      input_schema={"type": "object", "properties": {"command": {"type": "string"}}}),)
    messages = _reads("Fix f3.py so the tests pass.", 12, path="f{}.py", line="line{} ", repeat=300)
    at = 1 + 2 * 8  # before the 9th assistant message: calls 9..13 are sent the compacted view
    report = replay_messages(messages, system="You are a coding agent.", tools=tools, window=128_000,
                             policy="nova", counter=COUNTER, compact_before=[at], price_model="claude-sonnet-4-5")
    (receipt,) = report.receipts
    assert receipt.calls_after == 5
    data = report.to_json()
    (shown,) = data["receipts"]
    assert shown == receipt.to_json() and shown["calls_after"] == 5
    assert shown["tokens_before"] > shown["tokens_after"]
    assert receipt_line(CompactionReceipt.from_json(shown)) == receipt_line(receipt)


def test_the_transcript_boundary_keeps_the_receipt() -> None:
    from nova.sessions.schema import BoundaryRecord, boundary_record, record_from_json

    receipt = compaction_receipt(tokens_before=9_000, tokens_after=3_000, summary_input_tokens=9_000,
                                 summary_output_tokens=500, prices=prices_for("gpt-5"))
    record = record_from_json(boundary_record(BoundaryRecord(id="cmp1", summary="s", tokens_before=9_000,
                                                             tokens_after=3_000, receipt=receipt.to_json())),
                              "transcript.jsonl:1")
    assert isinstance(record, BoundaryRecord) and record.receipt == receipt.to_json()
    older = record_from_json(boundary_record(BoundaryRecord(id="cmp0", summary="s")), "transcript.jsonl:2")
    assert isinstance(older, BoundaryRecord) and older.receipt is None


def test_the_fixed_prompt_stays_cached_and_is_not_counted_as_rewritten() -> None:
    # 100,000 -> 20,000 tokens, of which the system prompt and tools are 12,000: the first call after
    # writes the 8,000 that follow them, 8,000 * (1.25 - 0.1) = 9,200 units, not the whole view's 23,000.
    prices = prices_for("claude-sonnet-4-5")
    receipt = compaction_receipt(tokens_before=100_000, tokens_after=20_000, summary_input_tokens=100_000,
                                 summary_output_tokens=2_000, prices=prices, kept_prefix_tokens=12_000)
    assert abs(receipt.rewrite_cost - 9_200) < 1e-6
    assert receipt.break_even_calls == 4  # ceil(29,200 / 8,000)


def test_a_replayed_receipt_rewrites_what_the_simulated_cache_writes() -> None:
    # A long fixed prompt (the part a compaction keeps in place) and a compaction forced mid-run: the
    # receipt's rewrite is what the Anthropic cache simulation writes on the call after it, within the
    # few tokens the view's own growth adds to that call.
    from nova.evaluation.replay import replay_messages
    from nova.model import ToolSpec

    tools = (ToolSpec(name="bash", description="Run a shell command.",
                      input_schema={"type": "object", "properties": {"command": {"type": "string"}}}),)
    system = "You are a careful coding agent. Follow the repository's conventions. " * 400
    messages = _reads("Fix f3.py so the tests pass.", 12, path="f{}.py", line="line{} ", repeat=300)
    report = replay_messages(messages, system=system, tools=tools, window=128_000, policy="nova", counter=COUNTER,
                             compact_before=[1 + 2 * 8], price_model="claude-sonnet-4-5", provider_cache="anthropic")
    (receipt,) = report.receipts
    after = next(c for c in report.per_call[8:] if c.cache.cache_write_tokens)
    prices = prices_for("claude-sonnet-4-5")
    rewritten = receipt.rewrite_cost / (prices.write - prices.read)
    assert after.cache.cache_read_tokens > receipt.tokens_after / 2  # the fixed prompt was read, not written
    assert abs(rewritten - after.cache.cache_write_tokens) < 0.2 * after.cache.cache_write_tokens + 200


def test_the_summary_call_is_charged_for_what_the_summarizer_wrote() -> None:
    # The summary message holds the user's words, the carried rows and restored files that Nova adds
    # itself; a model summary call outputs only the body. The receipt charges that body, as the replay's
    # cost model charges its estimated summary call.
    from nova.evaluation.replay import replay_messages

    messages = [Message.user("Fix the date parser in utils/dates.py. " + "Keep the public API exactly. " * 200,
                             id="task")]
    for i in range(14):
        call = ToolUsePart(id=f"call{i}", name="bash", input={"command": f"sed -i 's/a/b/' src/mod{i}.py"})
        messages.append(Message(role="assistant", parts=(call,), id=f"a{i}", created_at=1000.0 + i))
        messages.append(Message(role="user", parts=(ToolResultPart(f"call{i}", f"row {i} " * 400),),
                                id=f"r{i}", created_at=1000.5 + i))
    messages.append(Message.assistant("Done.", id="final", created_at=2000.0))
    report = replay_messages(messages, system="You are a coding agent.", window=128_000, policy="nova",
                             counter=COUNTER, compact_before=[1 + 2 * 10], price_model="claude-sonnet-4-5",
                             provider_cache="anthropic", summarizer_estimate=True)
    (receipt,) = report.receipts
    prices = prices_for("claude-sonnet-4-5")
    written = (receipt.summary_cost - receipt.tokens_before * prices.read) / prices.output
    assert report.summary_calls == 1
    assert abs(written - report.summary_output_tokens) <= 2
    summary = next(m for m in report.final_view if m.origin == "summary")
    assert COUNTER.count(summary.text) > 2 * report.summary_output_tokens  # the user's words are not output


def test_the_receipt_charges_a_summary_call_only_when_the_summarizer_makes_one(tmp_path: Path) -> None:
    """The pipeline wraps the summarizer (the continuity guard, the view-as-sent adapter): the receipt and
    the cost schedule look through the wrappers, so the extractive summary (the demo's, `summarizer:
    extractive`) costs no call and a model summary does. A replay's extractive summary stands for the
    model summary a live Nova would write, so it decides and prices as that call."""
    from nova.agent.context_runtime import ContextSources
    from nova.agent.pipeline import build_context_pipeline
    from nova.context.state import MemoryStateSource, TaskStateStore
    from nova.context.summarize import ExtractiveSummarizer, ModelSummarizer
    from nova.evaluation.replay import replay_messages
    from nova.testing import ScriptedProvider

    def pipeline_with(summarizer: object) -> ContextController:
        return build_context_pipeline(
            budget=ContextBudget.derive(CompactionConfig(), 32_000), config=CompactionConfig(),
            ledger=TokenLedger(COUNTER), sources=ContextSources(head=(), policy=()),
            state=TaskStateStore(MemoryStateSource()), summarizer=summarizer,  # type: ignore[arg-type]
            tools=(), cwd=tmp_path, session=SessionLink(dir=tmp_path / "session")).controller

    assert not pipeline_with(ExtractiveSummarizer(COUNTER)).summarizer.model_call
    assert pipeline_with(ModelSummarizer(ScriptedProvider([]), model="m")).summarizer.model_call
    assert "no summary call" in receipt_line(compaction_receipt(
        tokens_before=1_000, tokens_after=100, summary_input_tokens=0, summary_output_tokens=0, prices=CachePrices()))

    messages = _reads("Fix the date parser in utils/dates.py.", 14, path="src/mod{}.py", line="row {} ", repeat=400)
    report = replay_messages(messages, system="You are a coding agent.", window=128_000, policy="nova",
                             counter=COUNTER, compact_before=[21], price_model="claude-sonnet-4-5",
                             provider_cache="anthropic")
    (receipt,) = report.receipts
    assert receipt.summary_cost > 0
