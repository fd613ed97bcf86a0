"""The session host (`nova.host.hub.SessionHub`) under slow closes and eviction, on real sessions.

A slow close is a real one made slow: the session's connection to the (real, SQLite) session store
waits on a gate the test opens before it closes, as a close that waits for memory extraction is slow.
A turn is held open the same way, by a model that waits on a gate before it answers.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from typer.testing import CliRunner

from nova import events as ev
from nova.agent.builder import AgentOptions
from nova.cli.main import app as cli_app
from nova.host.hub import HostLimits, LiveSession, SessionHub
from nova.model import ModelRequest
from nova.providers.scripted import FunctionProvider, reply
from nova.server.config import ServerConfig
from nova.server.serve import ServeOptions, build_server_app, server_config
from nova.sessions.sqlite import SQLiteSessionStore
from nova.sessions.store import SessionStore
from nova.settings import load_settings

from .helpers import run_hub_turn

T = TypeVar("T")
HOLD = "hold this turn open"
PROMPT_WAIT_S = 10.0
"""How long any call here may take before the test calls it stuck (they take milliseconds)."""


class Gate:
    """Something that waits until the test opens it, and says whether anything is waiting on it now."""

    def __init__(self) -> None:
        self.opened = threading.Event()
        self.entered = threading.Event()
        self.left = threading.Event()

    def wait(self) -> None:
        self.entered.set()
        try:
            assert self.opened.wait(30), "the test never opened the gate"
        finally:
            self.left.set()

    def open(self) -> None:
        self.opened.set()


class GatedStore(SQLiteSessionStore):
    """The real session store; once given a gate, closing it waits for the gate first."""

    gate: Gate | None = None

    def close(self) -> None:
        if self.gate is not None:
            self.gate.wait()
        super().close()


class Stores:
    """The hub's `open_store`: each open session's store connection, in the order they were opened."""

    def __init__(self) -> None:
        self.opened: list[GatedStore] = []

    def open(self, home: Path) -> SessionStore:
        self.opened.append(GatedStore(home / "nova.db"))
        return self.opened[-1]

    def slow_close_latest(self, gate: Gate) -> None:
        """Make closing the session opened last wait on `gate`."""
        self.opened[-1].gate = gate


def within(seconds: float, fn: Callable[[], T]) -> T:
    """`fn()` on another thread; fails (instead of hanging the suite) if it is not back in `seconds`."""
    result: list[T] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            result.append(fn())
        except BaseException as exc:  # handed to the test thread
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"the call was not back within {seconds} s"
    if errors:
        raise errors[0]
    return result[0]


def wait_until(check: Callable[[], bool], timeout: float = PROMPT_WAIT_S) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


class Model:
    """One FunctionProvider per session: answers at once, except a turn asking to be held, which
    waits on `held` first."""

    def __init__(self) -> None:
        self.held = Gate()

    def provider(self) -> FunctionProvider:
        def answer(request: ModelRequest) -> reply:
            if any(HOLD in m.text for m in request.messages if m.role == "user"):
                self.held.wait()
            return reply("done")

        return FunctionProvider(answer)


@pytest.fixture
def model() -> Model:
    return Model()


@pytest.fixture
def stores() -> Stores:
    return Stores()


@pytest.fixture
def make_hub(
    nova_home: Path, tmp_path: Path, model: Model, stores: Stores,
) -> Iterator[Callable[[HostLimits], SessionHub]]:
    hubs: list[SessionHub] = []
    project = tmp_path / "project"
    project.mkdir()

    def make(limits: HostLimits) -> SessionHub:
        settings = load_settings(env={"NOVA_HOME": str(nova_home)},
                                 overrides={"provider": "demo", "model": "nova-demo"})
        hub = SessionHub(settings, options=AgentOptions(cwd=project, yes=True), make_provider=model.provider,
                         limits=limits, open_store=stores.open)
        hubs.append(hub)
        return hub

    yield make
    for hub in hubs:
        hub.close()


def run_turn(hub: SessionHub, session_id: str, text: str) -> list[ev.Event]:
    return run_hub_turn(hub, session_id, text, wait_s=PROMPT_WAIT_S)


def user_texts(hub: SessionHub, session_id: str) -> list[str]:
    live = hub.live(session_id)
    return [m.text for m in live.agent.history if m.role == "user" and m.text]


# -- (a) the hub answers other sessions while one is closing slowly --------------------------------------
def test_other_sessions_are_served_while_a_delete_waits_for_a_slow_close(
    make_hub: Callable[[HostLimits], SessionHub], stores: Stores,
) -> None:
    hub = make_hub(HostLimits())
    slow = hub.create("slow")
    gate = Gate()
    stores.slow_close_latest(gate)
    deleting = threading.Thread(target=hub.delete, args=(slow.id,), daemon=True)
    deleting.start()
    assert gate.entered.wait(PROMPT_WAIT_S), "the close did not start"

    other = within(PROMPT_WAIT_S, lambda: hub.create("other"))
    assert within(PROMPT_WAIT_S, lambda: hub.meta(other.id)).title == "other"
    events = within(PROMPT_WAIT_S, lambda: run_turn(hub, other.id, "hello"))
    assert any(isinstance(e, ev.TurnFinished) for e in events)
    report = within(PROMPT_WAIT_S, lambda: hub.context(other.id))
    assert report["used"] > 0
    assert other.id in {m.id for m in within(PROMPT_WAIT_S, hub.sessions)}
    assert not within(PROMPT_WAIT_S, lambda: hub.is_running(slow.id))
    # All of that happened while the slow session was still closing.
    assert not gate.left.is_set() and deleting.is_alive()

    gate.open()
    deleting.join(PROMPT_WAIT_S)
    assert not deleting.is_alive()
    assert slow.id not in {m.id for m in hub.sessions()}


def test_a_caller_of_a_closing_session_waits_for_the_close_then_gets_it_reopened(
    make_hub: Callable[[HostLimits], SessionHub], stores: Stores,
) -> None:
    hub = make_hub(HostLimits(max_live=1, idle_timeout_s=None))
    first = hub.create("first")
    gate = Gate()
    stores.slow_close_latest(gate)
    run_turn(hub, first.id, "remember me")
    second = within(PROMPT_WAIT_S, lambda: hub.create("second"))  # evicts `first`; does not wait for it
    assert gate.entered.wait(PROMPT_WAIT_S)
    assert hub.open_ids() == {second.id}

    reopened: list[LiveSession] = []
    needing_first = threading.Thread(target=lambda: reopened.append(hub.live(first.id)), daemon=True)
    needing_first.start()
    time.sleep(0.2)
    # Not opened a second time while the first copy still writes to the record.
    assert not reopened and needing_first.is_alive()
    within(PROMPT_WAIT_S, lambda: run_turn(hub, second.id, "meanwhile"))

    gate.open()
    needing_first.join(PROMPT_WAIT_S)
    assert reopened and reopened[0] is not first
    assert first.closed and not reopened[0].closed
    assert user_texts(hub, first.id) == ["remember me"]


# -- (b) eviction past the limit ------------------------------------------------------------------------
def test_eviction_closes_idle_sessions_without_blocking_and_never_a_running_one(
    make_hub: Callable[[HostLimits], SessionHub], model: Model, stores: Stores,
) -> None:
    hub = make_hub(HostLimits(max_live=2, idle_timeout_s=None))
    running = hub.create("running")
    turn_over = threading.Event()
    hub.start_turn(running.id, HOLD, lambda e: turn_over.set() if e is None else None)
    assert model.held.entered.wait(PROMPT_WAIT_S)
    idle = hub.create("idle")
    gate = Gate()
    stores.slow_close_latest(gate)

    # Two over the limit in turn: each time the least recently used idle session goes, never the one
    # running (it is the oldest of all), and creating does not wait for the slow close.
    third = within(PROMPT_WAIT_S, lambda: hub.create("third"))
    assert gate.entered.wait(PROMPT_WAIT_S)
    assert hub.open_ids() == {running.id, third.id}
    fourth = within(PROMPT_WAIT_S, lambda: hub.create("fourth"))
    wait_until(lambda: third.closed)
    assert hub.open_ids() == {running.id, fourth.id}
    assert not gate.left.is_set()  # the slow close is still under way
    assert hub.is_running(running.id) and not running.closed

    model.held.open()
    assert turn_over.wait(PROMPT_WAIT_S)
    assert user_texts(hub, running.id) == [HOLD]
    gate.open()
    wait_until(lambda: idle.closed and gate.left.is_set())
    # A closed session comes back from its record on its next use.
    run_turn(hub, idle.id, "back again")
    assert user_texts(hub, idle.id) == ["back again"]


def test_idle_sessions_are_closed_after_the_idle_timeout_and_running_ones_are_kept(
    make_hub: Callable[[HostLimits], SessionHub], model: Model,
) -> None:
    hub = make_hub(HostLimits(max_live=100, idle_timeout_s=0.2))
    running = hub.create("running")
    turn_over = threading.Event()
    hub.start_turn(running.id, HOLD, lambda e: turn_over.set() if e is None else None)
    idle = hub.create("idle")
    wait_until(lambda: idle.closed)
    time.sleep(0.5)  # well past the timeout: the running one stays
    assert hub.open_ids() == {running.id} and not running.closed
    model.held.open()
    assert turn_over.wait(PROMPT_WAIT_S)
    # Its idle time counts from the end of the turn, so it goes only after that.
    wait_until(lambda: running.closed)
    assert hub.open_ids() == set()


# -- (c) the configuration ------------------------------------------------------------------------------
def test_the_server_takes_its_session_limits_from_the_config(nova_home: Path, tmp_path: Path) -> None:
    nova_home.mkdir(parents=True)
    (nova_home / "config.json").write_text(
        '{"server": {"max_live_sessions": 40, "idle_session_timeout_s": 90}}', encoding="utf-8")
    settings = load_settings(env={"NOVA_HOME": str(nova_home)}, overrides={"provider": "demo"})
    assert server_config(settings) == ServerConfig(max_live_sessions=40, idle_session_timeout_s=90.0)
    app = build_server_app(settings, ServeOptions(cwd=tmp_path), "t" * 32, {"NOVA_HOME": str(nova_home)})
    assert app.state.hub.limits == HostLimits(max_live=40, idle_timeout_s=90.0)
    assert ServerConfig().max_live_sessions >= 100  # many idle sessions are kept by default


def test_idle_timeout_null_turns_the_timeout_off(nova_home: Path) -> None:
    nova_home.mkdir(parents=True)
    (nova_home / "config.json").write_text('{"server": {"idle_session_timeout_s": null}}', encoding="utf-8")
    settings = load_settings(env={"NOVA_HOME": str(nova_home)}, overrides={"provider": "demo"})
    assert server_config(settings).idle_session_timeout_s is None


@pytest.mark.parametrize(
    ("key", "value", "shown"),
    [
        ("max_live_sessions", "0", "0"),
        ("max_live_sessions", '"many"', "'many'"),
        ("max_live_sessions", "true", "True"),
        ("idle_session_timeout_s", "-5", "-5"),
        ("idle_session_timeout_s", "0", "0"),
        ("idle_session_timeout_s", '"soon"', '"soon"'),
    ],
)
def test_a_bad_session_limit_stops_nova_serve_naming_file_key_and_value(
    nova_home: Path, key: str, value: str, shown: str,
) -> None:
    nova_home.mkdir(parents=True)
    config = nova_home / "config.json"
    config.write_text(f'{{"server": {{"{key}": {value}}}}}', encoding="utf-8")
    result = CliRunner().invoke(cli_app, ["serve", "--provider", "demo"])
    assert result.exit_code == 1, result.output
    output = " ".join(result.output.split())  # the console wraps long lines
    assert str(config) in output and key in output and shown in output, output


def test_a_session_just_opened_is_kept_when_every_other_one_is_running(
    make_hub: Callable[[HostLimits], SessionHub], model: Model,
) -> None:
    hub = make_hub(HostLimits(max_live=1, idle_timeout_s=None))
    running = hub.create("running")
    turn_over = threading.Event()
    hub.start_turn(running.id, HOLD, lambda e: turn_over.set() if e is None else None)
    second = hub.create("second")
    # Over the limit for now: the running one cannot be closed, and closing the new one would only
    # make its caller open it again.
    assert hub.open_ids() == {running.id, second.id}
    run_turn(hub, second.id, "served")
    model.held.open()
    assert turn_over.wait(PROMPT_WAIT_S)
    third = hub.create("third")  # the next open brings the hub back to its limit
    wait_until(lambda: running.closed and second.closed)
    assert hub.open_ids() == {third.id}


def test_a_leased_session_is_never_evicted_and_goes_once_its_lease_ends(
    make_hub: Callable[[HostLimits], SessionHub],
) -> None:
    # A call between finding a session and using it (a context report, the start of a turn) holds a
    # lease: sessions opened meanwhile push the hub past its limit, but never close the leased one.
    hub = make_hub(HostLimits(max_live=1, idle_timeout_s=None))
    first = hub.create("first")
    with hub.leased(first.id) as live:
        assert live is first
        others = [hub.create(f"other {n}") for n in range(3)]
        time.sleep(0.1)
        assert not first.closed and first.id in hub.open_ids()
        assert user_texts(hub, first.id) == []  # still usable on the same open copy
        assert hub.live(first.id) is first
    # Back to the limit once the lease ends: the least recently used idle session goes, and the one just
    # used counts as used at the end of its lease.
    wait_until(lambda: others[-1].closed)
    assert hub.open_ids() == {first.id} and all(o.closed for o in others)
