"""Sessions kept open between turns by a PostgreSQL worker: reused as they are while nobody else wrote to
them, rebuilt from the database when another worker did.

Each worker is a real `SessionHub` over `PostgresWorkers` in this process (its own turn locks, so its own
advisory-lock connections: to the database, two separate workers), sharing one schema of the test
PostgreSQL; the model is a `FunctionProvider` that says which turn it answers, so a request shows what
history the agent that sent it had. Without the test database these skip.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from nova import events as ev
from nova.agent.builder import AgentOptions
from nova.errors import NovaError
from nova.host.hub import SessionHub
from nova.memory.extract import EXTRACTION_PROMPT
from nova.model import ModelRequest, Usage
from nova.providers.scripted import FunctionProvider, reply
from nova.server.postgres_workers import PostgresWorkers
from nova.sessions.lock import SessionLock
from nova.sessions.meta import session_dir
from nova.sessions.postgres import PostgresSessionStore
from nova.settings import load_settings

from ..postgres_db import fresh_schema
from .helpers import run_hub_turn

TURN_WAIT_S = 30.0
TURN_USAGE = Usage(input_tokens=100, output_tokens=10)
EXTRACTION_USAGE = Usage(input_tokens=5000, output_tokens=1)


class Model:
    """Answers turn N with "answer to turn N" and keeps every request it was sent (any session's)."""

    def __init__(self, *, slow_extraction_s: float = 0.0) -> None:
        self.requests: list[ModelRequest] = []
        self.extractions = 0
        self._lock = threading.Lock()
        self.slow_extraction_s = slow_extraction_s

    def provider(self) -> FunctionProvider:
        def answer(request: ModelRequest) -> reply:
            if request.system == EXTRACTION_PROMPT:
                # Slow on purpose: a hand-back that did not wait for it would save the session first.
                time.sleep(self.slow_extraction_s)
                with self._lock:
                    self.extractions += 1
                return reply("[]", usage=EXTRACTION_USAGE)
            with self._lock:
                self.requests.append(request)
            asked = [m.text for m in request.messages if m.role == "user" and m.text.startswith("turn ")][-1]
            return reply(f"answer to {asked}", usage=TURN_USAGE)

        return FunctionProvider(answer)


@pytest.fixture
def pg_url() -> Iterator[str]:
    schema = fresh_schema()
    url = next(schema)
    yield url
    schema.close()


@pytest.fixture
def make_worker(pg_url: str, tmp_path: Path) -> Iterator[Callable[..., SessionHub]]:
    hubs: list[SessionHub] = []
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)

    def make(home: Path, model: Model, *, provider: str = "demo", model_name: str = "nova-demo") -> SessionHub:
        settings = load_settings(env={"NOVA_HOME": str(home)}, overrides={"provider": provider, "model": model_name})
        hub = SessionHub(settings, options=AgentOptions(cwd=project, yes=True), make_provider=model.provider,
                         open_store=lambda _home: PostgresSessionStore(pg_url),
                         shared=PostgresWorkers(home, pg_url))
        hubs.append(hub)
        return hub

    yield make
    for hub in hubs:
        hub.close()


def run_turn(hub: SessionHub, session_id: str, text: str) -> list[ev.Event]:
    """One turn, back once its stream ended (the session handed back, its claim let go)."""
    events = run_hub_turn(hub, session_id, text, wait_s=TURN_WAIT_S)
    assert any(isinstance(e, ev.TurnFinished) and e.stop_reason == "end_turn" for e in events), events
    return events


def seen(request: ModelRequest) -> list[str]:
    """The conversation a request carried: each turn's request and answer, in order."""
    return [m.text for m in request.messages
            if m.text.startswith(("turn ", "answer to turn "))]


def conversation(turns: int) -> list[str]:
    return [t for n in range(1, turns + 1) for t in (f"turn {n}", f"answer to turn {n}")][:-1]


@pytest.mark.parametrize("homes", ["one home", "two hosts"])
def test_a_session_used_alternately_by_two_workers_sees_every_record_of_the_other(
    make_worker: Callable[..., SessionHub], tmp_path: Path, pg_url: str, homes: str,
) -> None:
    model = Model()
    a = make_worker(tmp_path / "home-a", model)
    b = make_worker(tmp_path / ("home-a" if homes == "one home" else "home-b"), model)
    session_id = a.create("shared").id
    # a, b, a, a, b: every switch finds the other worker's turns; a's kept copy is behind after b's.
    order = [a, b, a, a, b]
    for n, hub in enumerate(order, start=1):
        run_turn(hub, session_id, f"turn {n}")
        assert seen(model.requests[-1]) == conversation(n), f"turn {n} was sent a stale history"
    # a built at create and again for turn 3 (b had written), never for turns 1 and 4; b for turns 2 and 5.
    assert (a.builds, b.builds) == (2, 2)
    # And the other way: a's kept copy is behind b's last turn, so a's next use rebuilds and sees it.
    run_turn(a, session_id, "turn 6")
    assert seen(model.requests[-1]) == conversation(6)
    assert a.builds == 3
    row = PostgresSessionStore(pg_url).get_session(session_id)
    assert row is not None and row.meta["message_count"] == 12  # six requests, six answers


def test_a_session_reused_on_the_same_worker_is_not_rebuilt(
    make_worker: Callable[..., SessionHub], tmp_path: Path,
) -> None:
    model = Model()
    home = tmp_path / "home"
    hub = make_worker(home, model)
    session_id = hub.create("kept").id
    for n in range(1, 5):
        run_turn(hub, session_id, f"turn {n}")
        assert seen(model.requests[-1]) == conversation(n)
        hub.status(session_id)  # a read of its live state between turns keeps it too
        # Between turns its session.lock is free: another worker on this home could take the session.
        other = SessionLock(session_dir(home, session_id), session_id)
        other.acquire()
        other.release()
    assert hub.builds == 1  # the agent built when the session was created, and no other


def test_a_write_by_anyone_else_between_turns_makes_the_worker_rebuild(
    make_worker: Callable[..., SessionHub], tmp_path: Path, pg_url: str,
) -> None:
    """Not only another worker's turn: a meta change (a title) made elsewhere moves the version too."""
    model = Model()
    hub = make_worker(tmp_path / "home", model)
    session_id = hub.create("before").id
    run_turn(hub, session_id, "turn 1")
    assert hub.builds == 1
    store = PostgresSessionStore(pg_url)
    row = store.get_session(session_id)
    assert row is not None
    store.save_session(replace(row, title="renamed elsewhere", updated_at=row.updated_at + 1))
    run_turn(hub, session_id, "turn 2")
    assert hub.builds == 2
    assert hub.meta(session_id).title == "renamed elsewhere"  # the rebuilt copy saved the new title, not the old


def test_a_turns_memory_extraction_is_recorded_before_the_session_is_handed_back(
    make_worker: Callable[..., SessionHub], tmp_path: Path, pg_url: str,
) -> None:
    model = Model(slow_extraction_s=0.3)
    hub = make_worker(tmp_path / "home", model, provider="anthropic", model_name="claude-sonnet-4-5")
    session_id = hub.create("remembers").id
    store = PostgresSessionStore(pg_url)
    for n in range(1, 3):
        run_turn(hub, session_id, f"turn {n}")
        # The stream ended: the session was handed back, so the extraction's call is in its stored row.
        assert model.extractions == n
        row = store.get_session(session_id)
        assert row is not None
        assert row.meta["usage"]["input_tokens"] == n * (TURN_USAGE.input_tokens + EXTRACTION_USAGE.input_tokens)
    assert hub.builds == 1


def test_a_turn_refused_before_it_runs_still_hands_the_session_back(
    make_worker: Callable[..., SessionHub], tmp_path: Path,
) -> None:
    model = Model()
    home = tmp_path / "home"
    hub = make_worker(home, model)
    session_id = hub.create("refused").id
    run_turn(hub, session_id, "turn 1")
    with pytest.raises(NovaError):
        hub.start_turn(session_id, "/skill no-such-skill", lambda _: None)
    other = SessionLock(session_dir(home, session_id), session_id)
    other.acquire()  # free, for a worker sharing this home
    other.release()
    run_turn(hub, session_id, "turn 2")
    assert seen(model.requests[-1]) == conversation(2)
    assert hub.builds == 1
