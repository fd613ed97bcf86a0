"""The anchor and the reasoning that goes back (TOK-1, TOK-2): a reply's signed reasoning is input again
while its turn goes on and is dropped when the turn ends; what the recordings leave out of a step (a
reply's unrecorded thinking, a hosted tool's results) is sized from what they do record."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from tests.codex_rollout import response_item, token_count

from nova.messages import Message, TextPart, ThinkingPart, ToolResultPart, ToolUsePart
from nova.model import Usage
from nova.sessions.importers import read_session_file
from nova.tokens import (
    CL100K_PROFILE,
    HeuristicCounter,
    TokenLedger,
    count_message,
    estimate_context_tokens,
    opens_turn,
    reasoning_goes_back,
    turn_drops_reasoning,
)
from nova.tokens.calibration import GrowthStep, replayed_reasoning, score_ledger
from nova.tokens.counters import GEMINI_PROFILE, measure

SIGNED = ThinkingPart("I should read the file first.", signature="sig", provider="anthropic")
CALL = ToolUsePart("t1", "read", {"path": "a.py"})


def _reply(*parts: Any, model: str = "claude-sonnet-4-5") -> Message:
    return Message(role="assistant", parts=tuple(parts), metadata={"model": model})


def test_signed_reasoning_goes_back_while_the_turn_goes_on() -> None:
    assert reasoning_goes_back(_reply(SIGNED, CALL))
    assert reasoning_goes_back(_reply(ThinkingPart("", signature="enc", provider="openai-responses"), CALL))
    # The turn ends: Sonnet's thinking is dropped, Opus 4.5 keeps it.
    assert not reasoning_goes_back(_reply(SIGNED, TextPart("done")))
    assert reasoning_goes_back(_reply(SIGNED, TextPart("done"), model="claude-opus-4-5-20251101"))
    # Unsigned reasoning (a chat-completions server's reasoning_content) is never sent back.
    assert not reasoning_goes_back(_reply(ThinkingPart("hmm"), CALL))
    assert not reasoning_goes_back(_reply(CALL))
    assert turn_drops_reasoning(_reply(SIGNED, TextPart("done")))
    assert not turn_drops_reasoning(_reply(SIGNED, CALL))
    assert not turn_drops_reasoning(_reply(SIGNED, TextPart("done"), model="claude-opus-4-5"))


def test_the_anchor_holds_a_turns_reasoning_until_the_turn_ends() -> None:
    counter = HeuristicCounter(CL100K_PROFILE)
    ledger = TokenLedger(counter)
    user = Message(role="user", parts=(TextPart("fix a.py"),), id="u1")
    first = _reply(SIGNED, CALL).with_metadata()
    result = Message(role="user", parts=(ToolResultPart("t1", "print(1)"),), id="r1")
    ledger.record(first.id, Usage(input_tokens=1000, output_tokens=300, reasoning_tokens=200), reply=first)
    # The reply called a tool: its 200 reasoning tokens are part of the next request.
    assert ledger.anchor is not None and ledger.anchor.total == 1300
    assert ledger.estimate([user, first, result]) == 1300 + ledger.estimate_message(result)
    # The next reply ends the turn. Its input held the first reply's reasoning (1300 + the result); the
    # request after it starts a new turn without it.
    last = _reply(SIGNED, TextPart("fixed"))
    ledger.record(last.id, Usage(input_tokens=1400, output_tokens=150, reasoning_tokens=100), reply=last)
    assert ledger.anchor is not None
    assert ledger.anchor.context_tokens == 1400 - 200 and ledger.anchor.output_tokens == 50
    follow_up = Message(role="user", parts=(TextPart("thanks"),), id="u2")
    assert ledger.estimate([user, first, result, last, follow_up]) == 1250 + ledger.estimate_message(follow_up)


def test_a_turns_first_call_smaller_by_the_dropped_reasoning_teaches_no_remainder() -> None:
    counter = HeuristicCounter(CL100K_PROFILE)
    ledger = TokenLedger(counter)
    call = _reply(SIGNED, CALL)
    ledger.record(call.id, Usage(input_tokens=1000, output_tokens=300, reasoning_tokens=200), reply=call)
    result = Message(role="user", parts=(ToolResultPart("t1", "print(1)"),), id="r1")
    grown = 1300 + count_message(result, counter)
    end = _reply(SIGNED, TextPart("fixed"))
    ledger.record(end.id, Usage(input_tokens=grown, output_tokens=40, reasoning_tokens=20),
                  sent=[call, result], reply=end)
    assert ledger.growth.samples == (0,)  # exactly what the anchor and the result said
    # The new turn's call is 200 smaller than the last input plus what was added: no shrink, no remainder.
    question = Message(role="user", parts=(TextPart("and b.py?"),), id="u2")
    real = grown - 200 + 20 + count_message(question, counter)
    answer = _reply(TextPart("b.py is fine"))
    ledger.record(answer.id, Usage(input_tokens=real, output_tokens=10), sent=[call, result, end, question],
                  reply=answer)
    assert ledger.growth.samples == (0, 0)


def test_a_prompt_beside_the_tool_results_opens_a_new_turn() -> None:
    result = Message(role="user", parts=(ToolResultPart("t1", "print(1)"),))
    interrupted = Message(role="user", parts=(ToolResultPart("t1", "print(1)"), TextPart("[Request interrupted by user]"),
                                              TextPart("use b.py instead")))
    assert not opens_turn([result]) and opens_turn([interrupted])
    # A skill body or reminder the harness put beside the results is not the person's: the loop goes on.
    assert not opens_turn([Message(role="user", parts=(ToolResultPart("t1", "ok"), TextPart("skill body", harness=True)))])
    assert opens_turn([result, Message(role="user", parts=(TextPart("and b.py?"),))])
    assert not turn_drops_reasoning(_reply(SIGNED, CALL), after=[result])
    assert turn_drops_reasoning(_reply(SIGNED, CALL), after=[interrupted])
    # Opus 4.5 keeps its thinking across turns.
    assert not turn_drops_reasoning(_reply(SIGNED, CALL, model="claude-opus-4-5"), after=[interrupted])


def test_a_request_that_opens_a_new_turn_holds_none_of_the_turns_reasoning() -> None:
    counter = HeuristicCounter(CL100K_PROFILE)
    ledger = TokenLedger(counter)
    user = Message(role="user", parts=(TextPart("fix a.py"),), id="u1")
    first = _reply(SIGNED, CALL).with_metadata()
    ledger.record(first.id, Usage(input_tokens=1000, output_tokens=300, reasoning_tokens=200), reply=first)
    second = _reply(SIGNED, ToolUsePart("t2", "read", {"path": "b.py"})).with_metadata()
    result = Message(role="user", parts=(ToolResultPart("t1", "print(1)"),), id="r1")
    ledger.record(second.id, Usage(input_tokens=1400, output_tokens=250, reasoning_tokens=150),
                  sent=[user, first, result], reply=second)
    # While the tools run the person writes: the next request is a new turn, without the 350 tokens of
    # reasoning the turn's two replies sent back.
    back = Message(role="user", parts=(ToolResultPart("t2", "x = 2"), TextPart("stop, use c.py")), id="r2")
    history = [user, first, result, second, back]
    assert ledger.estimate(history) == 1650 - 350 + ledger.estimate_message(back) + ledger.growth.tokens
    assert estimate_context_tokens(history, anchor=ledger.anchor, counter=counter) == \
        1650 - 350 + ledger.estimate_message(back)
    # Answered exactly so, the call teaches no remainder.
    answer = _reply(TextPart("c.py it is"))
    before = ledger.growth.samples
    ledger.record(answer.id, Usage(input_tokens=1650 - 350 + ledger.estimate_message(back), output_tokens=10),
                  sent=history, reply=answer)
    assert ledger.growth.samples == (*before, 0)
    # A tool result alone continues the turn: the reasoning is still there.
    ledger.record(second.id, Usage(input_tokens=1400, output_tokens=250, reasoning_tokens=150),
                  sent=[user, first, result], reply=second)
    assert ledger.estimate([user, first, result, second, result]) == \
        1650 + ledger.estimate_message(result) + ledger.growth.tokens


def test_a_model_that_keeps_thinking_keeps_it_when_a_new_turn_opens() -> None:
    counter = HeuristicCounter(CL100K_PROFILE)
    ledger = TokenLedger(counter)
    reply = _reply(SIGNED, CALL, model="claude-opus-4-5-20251101").with_metadata()
    ledger.record(reply.id, Usage(input_tokens=1000, output_tokens=300, reasoning_tokens=200), reply=reply)
    back = Message(role="user", parts=(ToolResultPart("t1", "ok"), TextPart("and b.py")), id="r1")
    assert ledger.estimate([reply, back]) == 1300 + ledger.estimate_message(back)


def test_a_recorded_replys_thinking_is_sized_from_its_output_count() -> None:
    counter = HeuristicCounter(CL100K_PROFILE)
    thinking = ThinkingPart("Let me look at the parser before changing it. " * 5)
    sent = [CALL]  # as the reply goes back: the summary of its thinking is not kept
    visible = count_message(Message(role="assistant", parts=tuple(sent)), counter)
    generated = [thinking, CALL]
    # A complete output count: everything it holds beyond the visible reply is thinking.
    assert replayed_reasoning(sent, generated, visible + 500, "claude-sonnet-4-5", counter) == 500
    # A partial streaming count says nothing: the recorded summary is the lower bound.
    assert replayed_reasoning(sent, generated, 8, "claude-sonnet-4-5", counter) == counter.count(thinking.thinking)
    # A reply that ends its turn sends none of it back; one without thinking has none.
    assert replayed_reasoning([TextPart("done")], [thinking, TextPart("done")], 900, "claude-sonnet-4-5", counter) == 0
    assert replayed_reasoning(sent, [CALL], visible + 500, "claude-sonnet-4-5", counter) == 0


def test_score_ledger_counts_a_steps_unrecorded_reasoning_and_drops_it_at_the_turn_end() -> None:
    counter = HeuristicCounter(CL100K_PROFILE)
    reply = Message(role="assistant", parts=(CALL,))
    result = Message(role="user", parts=(ToolResultPart("t1", "x" * 40),))
    added = (reply, result)
    grown = sum(count_message(m, counter) for m in added)
    text = Message(role="assistant", parts=(TextPart("done"),))
    question = Message(role="user", parts=(TextPart("next?"),))
    turn = sum(count_message(m, counter) for m in (text, question))
    steps = [
        GrowthStep("s", "m", 10_000, 10_000 + grown + 300, added, reasoning=300),
        GrowthStep("s", "m", 10_000 + grown + 300, 10_000 + 2 * grown + 700, added, reasoning=400),
        # The reply before this call ended the turn: the 700 tokens of reasoning are gone.
        GrowthStep("s", "m", 10_000 + 2 * grown + 700, 10_000 + 2 * grown + turn, (text, question), ends_turn=True),
    ]
    score = score_ledger([steps], counter)
    assert max(score.anchored_errors_pct) < 1e-9


def test_a_codex_response_that_ran_a_web_search_says_so(tmp_path: Path) -> None:
    # Its input holds the search results, which the rollout does not: the reply names the hosted tool.
    path = tmp_path / "rollout.jsonl"
    call = {"type": "function_call", "name": "exec_command", "arguments": "{\"cmd\": \"ls\"}", "call_id": "c1"}
    records = [
        {"type": "session_meta", "payload": {"id": "s1", "cwd": "/repo"}},
        {"type": "turn_context", "payload": {"model": "gpt-5.5", "cwd": "/repo"}},
        response_item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "look it up"}]}),
        response_item(call),
        token_count(1_050, {"input_tokens": 1_000, "cached_input_tokens": 0, "output_tokens": 50}),
        response_item({"type": "function_call_output", "call_id": "c1", "output": "a.py"}),
        response_item({"type": "web_search_call", "status": "completed", "action": {"type": "search", "query": "x"}}),
        response_item({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "found"}]}),
        token_count(6_100, {"input_tokens": 5_000, "cached_input_tokens": 0, "output_tokens": 50}),
        response_item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "thanks"}]}),
        response_item({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]}),
        token_count(11_200, {"input_tokens": 5_070, "cached_input_tokens": 0, "output_tokens": 30}),
    ]
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    replies = [m for m in read_session_file(path).messages if m.role == "assistant"]
    assert [m.metadata.get("hosted_tools") for m in replies] == [None, ["web_search"], None]


def test_a_run_of_one_punctuation_character_has_its_own_weight() -> None:
    caret = "    x = f(y)\n        ^^^^^^^^^^^^^^^^^^^^\n"
    pieces = measure(caret)
    assert (pieces.runs, pieces.run_symbols, pieces.symbols) == (1, 20, 3)  # `=`, `(`, `)` and the run apart
    assert measure("a -- b").runs == 0 and measure("a ---- b").runs == 1
    # A profile without a run weight counts a run's characters as symbols, as it always did.
    as_symbols = replace(GEMINI_PROFILE, symbol_run=None, symbol_cluster=0.0)
    spaced = caret.replace("^" * 20, "^^^ " * 6 + "^^")  # the same 20 carets, in runs too short to count
    assert measure(spaced).runs == 0
    assert HeuristicCounter(as_symbols).count(caret) == HeuristicCounter(as_symbols).count(spaced)  # a space is no piece
    # Gemini's vocabulary has pieces for such runs: its profile counts them below a symbol a character.
    assert GEMINI_PROFILE.symbol_run is not None and GEMINI_PROFILE.symbol_run < GEMINI_PROFILE.symbol / 2
    saved = HeuristicCounter(as_symbols).count(caret) - HeuristicCounter(GEMINI_PROFILE).count(caret)
    assert abs(saved - 20 * (GEMINI_PROFILE.symbol - GEMINI_PROFILE.symbol_run)) <= 1


def test_punctuation_after_punctuation_has_its_own_weight() -> None:
    # Markup's `</`, `="`, `">` and code's `()`, `);`: the second character of each pair is clustered; the
    # characters of a run of one character are the run's, not clustered.
    assert measure('<a href="x">y</a>').clustered == 3  # `"` after `=`, `>` after `"`, `/` after `<`
    assert measure("f(); g ==== h").clustered == 2  # `)` and `;`; the run's three are not counted
    assert measure("a, b. c").clustered == 0
    # Gemini's vocabulary has pieces for such pairs: a page of markup costs far less than its symbols
    # counted one by one, and prose with lone punctuation costs what it did.
    lone = replace(GEMINI_PROFILE, symbol_cluster=0.0)
    page = '<div class="row"><span id="n1">1</span></div>\n' * 40
    assert HeuristicCounter(GEMINI_PROFILE).count(page) < 0.75 * HeuristicCounter(lone).count(page)
    prose = "Well, this is it. A sentence (with a clause) and more words; nothing else.\n" * 40
    assert HeuristicCounter(GEMINI_PROFILE).count(prose) == HeuristicCounter(lone).count(prose)
