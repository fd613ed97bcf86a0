"""NovaSession's own bookkeeping against the real Agents SDK types: pops and clears survive a reopen, and
any valid item list becomes well-paired Nova messages that render back unchanged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("agents", reason="the openai-agents extra is not installed")

from nova.integrations.openai_agents import NovaSession, pairing_violations


def test_popped_and_cleared_items_stay_so_when_the_session_reopens(tmp_path: Path) -> None:
    import asyncio

    session = NovaSession.open(window=16_000, home=tmp_path / "home", summarizer="extractive")
    first = [{"role": "user", "content": "one"}, {"role": "user", "content": "two"}]
    asyncio.run(session.add_items(first))  # type: ignore[arg-type]
    assert asyncio.run(session.pop_item()) == first[1]
    session_id = session.session_id
    session.close()
    reopened = NovaSession.open(window=16_000, home=tmp_path / "home", session_id=session_id)
    assert asyncio.run(reopened.get_items()) == first[:1]
    assert asyncio.run(reopened.get_items(limit=0)) == []
    # A pop inside one message (two calls of one response): what is left of it is kept once.
    calls = [{"type": "function_call", "call_id": "a", "name": "f", "arguments": "{}"},
             {"type": "function_call", "call_id": "b", "name": "f", "arguments": "{}"}]
    asyncio.run(reopened.add_items(calls))  # type: ignore[arg-type]
    asyncio.run(reopened.pop_item())
    assert asyncio.run(reopened.get_items()) == [first[0], calls[0]]
    reopened.close()
    reopened = NovaSession.open(window=16_000, home=tmp_path / "home", session_id=session_id)
    assert asyncio.run(reopened.get_items()) == [first[0], calls[0]]
    assert [m.text or m.tool_uses()[0].id for m in reopened.engine.history] == ["one", "a"]
    asyncio.run(reopened.clear_session())
    asyncio.run(reopened.add_items([{"role": "user", "content": "three"}]))  # type: ignore[list-item]
    reopened.close()
    again = NovaSession.open(window=16_000, home=tmp_path / "home", session_id=session_id)
    assert asyncio.run(again.get_items()) == [{"role": "user", "content": "three"}]
    again.close()


@st.composite
def _sdk_histories(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Valid Agents SDK input lists: user messages, answers, and responses of 1-3 calls followed by their
    outputs in any order."""
    items: list[dict[str, Any]] = []
    for turn in range(draw(st.integers(1, 6))):
        items.append({"role": "user", "content": f"request {turn}"})
        for step in range(draw(st.integers(0, 3))):
            ids = [f"c{turn}-{step}-{k}" for k in range(draw(st.integers(1, 3)))]
            if draw(st.booleans()):
                items.append({"type": "reasoning", "id": f"r{turn}-{step}", "summary": []})
            items += [{"type": "function_call", "call_id": i, "name": "f", "arguments": "{}"} for i in ids]
            order = draw(st.permutations(ids))
            items += [{"type": "function_call_output", "call_id": i, "output": f"out {i}"} for i in order]
        items.append({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]})
    return items


@settings(max_examples=60, deadline=None)
@given(_sdk_histories())
def test_the_items_become_well_paired_messages_and_render_back_as_they_were(items: list[dict[str, Any]]) -> None:
    from nova.history.invariants import check_tool_pairing
    from nova.integrations._engine import ContextEngine
    from nova.integrations._mirror import Mirror
    from nova.integrations.openai_agents import _Codec

    engine = ContextEngine(framework="openai-agents", window=64_000)
    mirror: Mirror[Any] = Mirror(engine, _Codec())
    mirror.follow(items)
    assert check_tool_pairing(engine.history) == []
    view = engine.prepare(system="", tools=[]).messages
    assert mirror.render(view) == items
    assert pairing_violations(items) == []


@pytest.fixture
def pg_url(monkeypatch: pytest.MonkeyPatch) -> Any:
    from tests.postgres_db import fresh_schema

    schema = fresh_schema()
    url = next(schema)
    monkeypatch.setenv("NOVA_DATABASE_URL", url)
    yield url
    next(schema, None)


def test_a_session_over_postgresql_reopens_on_another_home_from_the_database_alone(pg_url: str,
                                                                                    tmp_path: Path) -> None:
    import asyncio

    session = NovaSession.open(window=16_000, home=tmp_path / "a", summarizer="extractive")
    items = [{"role": "user", "content": "one"},
             {"type": "function_call", "call_id": "a", "name": "f", "arguments": "{}"},
             {"type": "function_call_output", "call_id": "a", "output": "x" * 30_000}]
    asyncio.run(session.add_items(items))  # type: ignore[arg-type]
    session_id = session.session_id
    session.close()
    elsewhere = NovaSession.open(window=16_000, home=tmp_path / "b", session_id=session_id)
    try:
        assert asyncio.run(elsewhere.get_items()) == items  # whole: the raw record, not the spilled view
    finally:
        elsewhere.close()
