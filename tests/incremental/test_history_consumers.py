"""The incremental pairing check, token totals and token ledger always say what a full recomputation says,
whatever sequence of appends, snips, compactions and copies the history went through; the memos they
use stay bounded without ever emptying."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nova.tokens.ledger as ledger_module
from nova.history.incremental import GenerationalMemo, MessageMemo, common_prefix, follow
from nova.history.invariants import PairingChecker, check_tool_pairing
from nova.messages import Message, TextPart, ToolResultPart, ToolUsePart
from nova.model import ToolSpec, Usage
from nova.tokens import TokenLedger, count_message, estimate_context_tokens
from nova.tokens.counters import CL100K_PROFILE, HeuristicCounter
from nova.tokens.memo import MemoCounter, MessageTotals

from .histories import edits, replay

COUNTER = HeuristicCounter(CL100K_PROFILE)
TOOLS = [ToolSpec("bash", "run a command", {"type": "object", "properties": {"command": {"type": "string"}}})]


def naive_prefix(a: Sequence[object], b: Sequence[object]) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


@settings(max_examples=300, deadline=None)
@given(length=st.integers(0, 6000), extra=st.integers(-3000, 50), change=st.one_of(st.none(), st.integers(0, 7000)),
       as_tuple=st.booleans())
def test_common_prefix_finds_the_first_difference(length: int, extra: int, change: int | None,
                                                  as_tuple: bool) -> None:
    before = list(range(length))
    after: Sequence[int] = list(range(max(length + extra, 0)))
    if change is not None and change < len(after):
        after[change] = -1  # type: ignore[index]
    if as_tuple:
        after = tuple(after)
    assert common_prefix(before, after) == naive_prefix(before, after)
    assert common_prefix(after, before) == naive_prefix(before, after)


FOLLOW_DRAWS = dict(length=st.integers(0, 9000),
                    back=st.sampled_from([0, 1, 3, 1022, 1023, 1024, 1025, 4097, 8000]),
                    grow=st.integers(-70, 70), as_tuple=st.booleans(), copies=st.booleans())


def check_follow_mirrors_the_new_list_and_says_how_much_was_shared(length: int, back: int, grow: int,
                                                                    as_tuple: bool, copies: bool) -> None:
    old = [object() for _ in range(length)]
    new: list[object] = list(old)
    if back < length:
        new[length - 1 - back] = object()  # a departure `back` from the old end
    new = new[: max(length + grow, 0)] if grow < 0 else new + [object() for _ in range(grow)]
    mirror = [dataclasses.replace(Message.user("x", id="same")) for _ in old] if copies else list(old)
    expected = common_prefix(mirror, new)
    got = follow(mirror, tuple(new) if as_tuple else new)
    assert got == expected
    assert mirror == new and all(a is b for a, b in zip(mirror, new, strict=True))


@settings(max_examples=60, deadline=None)
@given(**FOLLOW_DRAWS)
def test_follow_mirrors_the_new_list_and_says_how_much_was_shared(**drawn: Any) -> None:
    check_follow_mirrors_the_new_list_and_says_how_much_was_shared(**drawn)


@pytest.mark.slow  # the same property over 300 examples
@settings(max_examples=300, deadline=None)
@given(**FOLLOW_DRAWS)
def test_follow_mirrors_the_new_list_and_says_how_much_was_shared_over_many_lists(**drawn: Any) -> None:
    check_follow_mirrors_the_new_list_and_says_how_much_was_shared(**drawn)


def test_common_prefix_compares_equal_copies_as_equal() -> None:
    history = [Message.user(f"m{i}", id=f"m{i}", created_at=0.0) for i in range(5000)]
    copies = [dataclasses.replace(m) for m in history]
    assert common_prefix(history, copies) == 5000
    copies[4321] = copies[4321].with_parts([TextPart("snipped")])
    assert common_prefix(history, copies) == 4321


PAIRING_DRAWS = dict(steps=edits())


def check_pairing_checker_matches_the_full_check(steps: list) -> None:
    checker = PairingChecker()
    for index, history in enumerate(replay(steps)):
        view = tuple(history) if index % 2 else history
        assert checker.check(view) == check_tool_pairing(view)


@settings(max_examples=40, deadline=None)
@given(**PAIRING_DRAWS)
def test_pairing_checker_matches_the_full_check(**drawn: Any) -> None:
    check_pairing_checker_matches_the_full_check(**drawn)


@pytest.mark.slow  # the same property over 200 examples
@settings(max_examples=200, deadline=None)
@given(**PAIRING_DRAWS)
def test_pairing_checker_matches_the_full_check_over_many_histories(**drawn: Any) -> None:
    check_pairing_checker_matches_the_full_check(**drawn)


def test_pairing_checker_finds_a_broken_pair_deep_in_a_long_history() -> None:
    history: list[Message] = []
    for i in range(2000):
        use = ToolUsePart(f"c{i}", "bash", {"command": "ls"})
        history += [Message(role="assistant", parts=(use,), id=f"a{i}"),
                    Message(role="user", parts=(ToolResultPart(use.id, "ok"),), id=f"r{i}")]
    checker = PairingChecker()
    assert checker.check(history) == []
    history.append(Message.user("next", id="u"))
    assert checker.check(history) == []
    # A rewrite deep inside that answers the wrong call: found at its place, and gone once repaired.
    broken = history[1001].with_parts([ToolResultPart("nope", "ok")])
    bad = [*history[:1001], broken, *history[1002:]]
    assert checker.check(bad) == check_tool_pairing(bad) != []
    assert {v.index for v in checker.check(bad)} == {1000, 1001}
    assert checker.check(history) == []


TOTALS_DRAWS = dict(steps=edits(), starts=st.lists(st.integers(0, 80), min_size=12, max_size=12))


def check_message_totals_match_a_plain_sum(steps: list, starts: list[int]) -> None:
    sizes = MessageMemo(lambda m: count_message(m, COUNTER))
    totals = MessageTotals(sizes.get)
    for history, start in zip(replay(steps), starts, strict=False):
        assert totals.sum(history, start) == sum(count_message(m, COUNTER) for m in history[start:])


@settings(max_examples=40, deadline=None)
@given(**TOTALS_DRAWS)
def test_message_totals_match_a_plain_sum(**drawn: Any) -> None:
    check_message_totals_match_a_plain_sum(**drawn)


@pytest.mark.slow  # the same property over 200 examples
@settings(max_examples=200, deadline=None)
@given(**TOTALS_DRAWS)
def test_message_totals_match_a_plain_sum_over_many_histories(**drawn: Any) -> None:
    check_message_totals_match_a_plain_sum(**drawn)


LEDGER_DRAWS = dict(steps=edits(),
                    anchors=st.lists(st.tuples(st.sampled_from(["record", "clear", "keep", "missing"]),
                                                 st.integers(0, 10**6)), min_size=12, max_size=12),
                    direct=st.sampled_from([0, 3, 64]))


def check_ledger_estimate_matches_the_full_estimate(steps: list, anchors: list[tuple[str, int]], direct: int) -> None:
    saved = ledger_module._DIRECT_TAIL
    ledger_module._DIRECT_TAIL = direct  # both ways of summing the tail after the anchor
    try:
        ledger = TokenLedger(MemoCounter(COUNTER))
        for history, (what, at) in zip(replay(steps), anchors, strict=False):
            if what == "record" and history:
                ledger.record(history[at % len(history)].id, Usage(input_tokens=1000 + at % 500, output_tokens=7))
            elif what == "missing":
                ledger.record("not-there", Usage(input_tokens=5, output_tokens=1))
            elif what == "clear":
                ledger.clear()
            expected = estimate_context_tokens(history, anchor=ledger.anchor, system="be brief", tools=TOOLS,
                                               counter=COUNTER)
            assert ledger.estimate(history, "be brief", TOOLS) == expected
            assert all(ledger.estimate_message(m) == count_message(m, COUNTER) for m in history)
    finally:
        ledger_module._DIRECT_TAIL = saved


@settings(max_examples=40, deadline=None)
@given(**LEDGER_DRAWS)
def test_ledger_estimate_matches_the_full_estimate(**drawn: Any) -> None:
    check_ledger_estimate_matches_the_full_estimate(**drawn)


@pytest.mark.slow  # the same property over 200 examples
@settings(max_examples=200, deadline=None)
@given(**LEDGER_DRAWS)
def test_ledger_estimate_matches_the_full_estimate_over_many_histories(**drawn: Any) -> None:
    check_ledger_estimate_matches_the_full_estimate(**drawn)


def test_ledger_counts_a_snipped_message_again() -> None:
    ledger = TokenLedger(COUNTER)
    history = [Message.user("word " * 400, id="u1"), Message.assistant("ok", id="a1")]
    before = ledger.estimate(history)
    history[0] = history[0].with_parts([TextPart("[snipped]")])
    assert ledger.estimate(history) == estimate_context_tokens(history, anchor=None, counter=COUNTER) < before


@settings(max_examples=200, deadline=None)
@given(keys=st.lists(st.integers(0, 40), max_size=300), limit=st.integers(2, 20))
def test_generational_memo_is_bounded_and_keeps_what_was_used_last(keys: list[int], limit: int) -> None:
    memo: GenerationalMemo[int, int] = GenerationalMemo(limit)
    recent: list[int] = []
    for key in keys:
        if memo.get(key) is None:
            memo.put(key, key * 2)
        recent = [k for k in recent if k != key] + [key]
        assert len(memo) <= limit
        # Never emptied at once: the last limit // 2 distinct keys used are all still there.
        assert all(memo.get(k) == k * 2 for k in recent[-(limit // 2):])


def test_an_empty_memo_counter_is_used_not_replaced() -> None:
    counter = MemoCounter(COUNTER)
    assert TokenLedger(counter).counter is counter


def test_memo_counter_past_its_size_drops_only_the_old_half() -> None:
    counter = MemoCounter(COUNTER, limit=1000)
    texts = [f"text number {i}" for i in range(1500)]
    assert [counter.count(t) for t in texts] == [COUNTER.count(t) for t in texts]
    assert 500 <= counter.remembered <= 1000
    calls = 0

    class Counting:
        overheads = COUNTER.overheads

        def count(self, text: str) -> int:
            nonlocal calls
            calls += 1
            return COUNTER.count(text)

    counter.inner = Counting()
    # The most recent 500 texts are answered from the memo: nothing is counted again.
    assert [counter.count(t) for t in texts[-500:]] == [COUNTER.count(t) for t in texts[-500:]]
    assert calls == 0
