"""`MessageBlocks` reads like the list it stands for, and `LastSeen` finds how much of a new sequence
repeats the last one, whatever mix of lists, tuples and block views it is given; the consumers fed with
the compiler's block views of a long history still agree with a full recomputation."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from nova.context.cache import CachePlanner, plan_cache
from nova.history.incremental import BLOCK_SIZE, LastSeen, MessageBlocks, common_prefix
from nova.history.invariants import PairingChecker, check_tool_pairing
from nova.messages import Message
from nova.model import ModelRequest
from nova.tokens import count_message
from nova.tokens.counters import CL100K_PROFILE, HeuristicCounter
from nova.tokens.memo import MessageTotals

from .histories import as_views, edits, every_kind_of_edit, long_base, replay

COUNTER = HeuristicCounter(CL100K_PROFILE)
BASE = long_base(2 * BLOCK_SIZE + 300)
POOL = [Message.user(f"m{i}", id=f"m{i}", created_at=0.0) for i in range(6000)]


def blocks_of(items: list[Message], full: int) -> MessageBlocks:
    full = min(full, len(items) // BLOCK_SIZE)
    return MessageBlocks(tuple(tuple(items[i * BLOCK_SIZE : (i + 1) * BLOCK_SIZE]) for i in range(full)),
                         tuple(items[full * BLOCK_SIZE :]))


@settings(max_examples=200, deadline=None)
@given(length=st.integers(0, 4000), full=st.integers(0, 4), start=st.integers(-4500, 4500),
       stop=st.one_of(st.none(), st.integers(-4500, 4500)), step=st.sampled_from([1, 1, 2, -1]))
def test_message_blocks_read_like_the_list(length: int, full: int, start: int, stop: int | None, step: int) -> None:
    items = POOL[:length]
    view = blocks_of(items, full)
    assert len(view) == length and list(view) == items and view == items and view == tuple(items)
    assert view[start:stop:step] == items[start:stop:step]
    if -length <= start < length:
        assert view[start] is items[start]
    assert view != [*items, POOL[0]]


sequences = st.tuples(st.integers(0, 3500), st.integers(0, 3), st.sampled_from(["blocks", "list", "tuple"]),
                      st.one_of(st.none(), st.integers(0, 3500)))


def build(spec: tuple[int, int, str, int | None]) -> Sequence[Message]:
    length, full, kind, changed = spec
    items = list(POOL[:length])
    if changed is not None and changed < length:
        items[changed] = Message.user("changed", id=f"m{changed}", created_at=0.0)
    if kind == "blocks":
        return blocks_of(items, full)
    return items if kind == "list" else tuple(items)


@settings(max_examples=300, deadline=None)
@given(specs=st.lists(sequences, min_size=1, max_size=6))
def test_last_seen_says_how_much_repeats_whatever_the_kinds(specs: list) -> None:
    seen = LastSeen()
    previous: Sequence[Message] = ()
    for spec in specs:
        new = build(spec)
        assert seen.update(new) == common_prefix(list(previous), list(new))
        assert list(seen.items) == list(new)
        previous = new


def test_views_of_a_growing_history_share_blocks_and_compare_by_them() -> None:
    history = list(POOL[:3000])
    first = blocks_of(history, 2)
    second = MessageBlocks(first.blocks, (*first.tail, Message.user("new", id="new")))
    seen = LastSeen()
    seen.update(first)
    assert seen.update(second) == 3000
    assert second.blocks[0] is first.blocks[0]


def check_consumers(steps: list) -> None:
    checker, planner = PairingChecker(), CachePlanner(COUNTER)
    totals = MessageTotals(lambda m: count_message(m, COUNTER))
    for view in as_views(replay(steps), BASE):
        plain = list(view)
        assert checker.check(view) == check_tool_pairing(plain)
        request = ModelRequest(model="claude-sonnet-4-5", messages=view, system="be brief")
        assert planner.plan(request) == plan_cache(ModelRequest(model="claude-sonnet-4-5", messages=plain,
                                                                system="be brief"), counter=COUNTER)
        assert totals.sum(view, len(BASE) - 5) == sum(count_message(m, COUNTER) for m in plain[len(BASE) - 5 :])


# A full recomputation over 2,300 messages per step: a few drawn histories in the fast tier, after the
# fixed one that makes every kind of edit; many more in the slow tier.
@settings(max_examples=6, deadline=None)
@given(steps=edits())
@example(steps=every_kind_of_edit())
def test_consumers_fed_block_views_of_a_long_history_match_a_full_recomputation(steps: list) -> None:
    check_consumers(steps)


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(steps=edits())
def test_consumers_fed_block_views_of_many_long_histories_match_a_full_recomputation(steps: list) -> None:
    check_consumers(steps)
