"""A long-lived context compiler, which extends its history segments and cuts them back after a change,
compiles what a fresh compiler compiles, whatever the history went through; a manifest read long after
its call (the compiler has moved on) still describes that call."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from nova.context.compiler import CompileInput, ContextCompiler, SourceText, compile
from nova.messages import Message
from nova.model import ToolSpec, Usage
from nova.tokens import TokenLedger
from nova.tokens.counters import CL100K_PROFILE, HeuristicCounter

from .histories import edits, every_kind_of_edit, long_base, replay

COUNTER = HeuristicCounter(CL100K_PROFILE)
TOOLS = [ToolSpec("bash", "Run a command.", {"type": "object"})]
HEAD = [SourceText(id="system.contract", cls="always-on", source="nova", text="You are Nova.", reason="contract")]
PINNED = SourceText(id="task.state", cls="pinned", source="task state v1", text="Goal: fix it", reason="pinned")


def inputs(history: list[Message], ledger: TokenLedger | None, limit: int = 1_000_000) -> CompileInput:
    return CompileInput(head=HEAD, tools=TOOLS, history=history, pinned=PINNED, limit=limit, window=2_000_000,
                        counter=COUNTER, ledger=ledger)


# A small budget (60) leaves recalled memories out of the view.
COMPILER_DRAWS = dict(steps=edits(max_steps=10), anchored=st.booleans(), late=st.booleans(),
                      limit=st.sampled_from([1_000_000, 60]))


def check_a_long_lived_compiler_matches_a_fresh_one(steps: list, anchored: bool, late: bool, limit: int) -> None:
    compiler = ContextCompiler()
    ledger = TokenLedger(COUNTER) if anchored else None
    pending = []
    for step, history in enumerate(replay(steps)):
        if ledger is not None and history:
            ledger.record(history[-1].id, Usage(input_tokens=500, output_tokens=3))
            compiler.compile(inputs(history, ledger, limit))
            # A new figure for the same history (the next call's usage) is a new result, not the memo's.
            ledger.record(history[-1].id, Usage(input_tokens=600 + step, output_tokens=3))
        compiled = compiler.compile(inputs(history, ledger, limit))
        again = compiler.compile(inputs(list(history), ledger, limit))  # the same call twice
        fresh = compile(inputs(history, ledger, limit))
        assert again.view.to_bytes() == fresh.view.to_bytes() and again.used == fresh.used
        assert compiled.view.to_bytes() == fresh.view.to_bytes()
        assert compiled.used == fresh.manifest.used
        if late:
            pending.append((compiled, fresh.manifest.to_dict()))
        else:
            assert compiled.manifest.to_dict() == fresh.manifest.to_dict()
    # Manifests read only now, after the compiler went on to later calls (and maybe cut its segments).
    for compiled, expected in pending:
        assert compiled.manifest.to_dict() == expected


@settings(max_examples=30, deadline=None)
@given(**COMPILER_DRAWS)
def test_a_long_lived_compiler_matches_a_fresh_one(**drawn: Any) -> None:
    check_a_long_lived_compiler_matches_a_fresh_one(**drawn)


@pytest.mark.slow  # the same property over 150 examples
@settings(max_examples=150, deadline=None)
@given(**COMPILER_DRAWS)
def test_a_long_lived_compiler_matches_a_fresh_one_over_many_histories(**drawn: Any) -> None:
    check_a_long_lived_compiler_matches_a_fresh_one(**drawn)


def test_a_snip_deep_in_a_long_history_rebuilds_only_the_segments_after_it() -> None:
    history = []
    for i in range(3000):
        history += [Message.user(f"request {i}", id=f"u{i}", created_at=0.0),
                    Message.assistant(f"answer {i}", id=f"a{i}", created_at=0.0)]
    compiler = ContextCompiler()
    compiler.compile(inputs(history, None))
    before = list(compiler._chunks)
    history[5001] = history[5001].with_metadata(snipped=True)
    compiled = compiler.compile(inputs(history, None))
    fresh = compile(inputs(history, None))
    assert compiled.manifest.to_dict() == fresh.manifest.to_dict()
    assert compiled.view.to_bytes() == fresh.view.to_bytes()  # the view's block holding it was rebuilt
    # The segments wholly before the snipped message were kept, not redone (the very same objects; the
    # last of them is copied, since it may be extended again).
    kept = [c for c in before if c.end <= 5001]
    assert len(kept) > 2 and all(a is b for a, b in zip(kept[:-1], compiler._chunks, strict=False))
    assert (compiler._chunks[len(kept) - 1].ids, compiler._chunks[len(kept) - 1].digest) == (kept[-1].ids,
                                                                                             kept[-1].digest)


LONG = long_base(2 * 1024 + 300)


def check_long_history(steps: list) -> None:
    compiler = ContextCompiler()
    ledger = TokenLedger(COUNTER)
    previous = None
    for history in replay(steps):
        full = [*LONG, *history]
        ledger.record(full[-1].id, Usage(input_tokens=900, output_tokens=3))
        compiled = compiler.compile(inputs(full, ledger))
        fresh = compile(inputs(full, ledger))
        assert compiled.view.to_bytes() == fresh.view.to_bytes() and compiled.used == fresh.used
        assert list(compiled.view.messages) == list(fresh.view.messages)
        if previous is not None and full[:2048] == previous[0]:
            # An unchanged start of history is the very same blocks as in the previous view.
            assert compiled.view.messages.blocks[0] is previous[1].blocks[0]  # type: ignore[attr-defined]
        previous = (full[:2048], compiled.view.messages)


# Each drawn history costs two compiles of 2,300 messages per step: a few in the fast tier, after the
# fixed one that makes every kind of edit; many more in the slow tier.
@settings(max_examples=2, deadline=None)
@given(steps=edits(max_steps=8))
@example(steps=every_kind_of_edit())
def test_views_of_a_long_history_share_blocks_and_match_a_fresh_compile(steps: list) -> None:
    check_long_history(steps)


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(steps=edits(max_steps=8))
def test_views_of_many_long_histories_share_blocks_and_match_a_fresh_compile(steps: list) -> None:
    check_long_history(steps)
