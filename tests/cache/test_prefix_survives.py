"""The prompt-cache prefix survives what a session does besides growing: a resume, a memory block recalled
into a turn, a skill body loaded into one. The requests the production agent really sends are run through
the simulated Anthropic breakpoint cache and OpenAI prefix cache (`nova.context.cache_sim`): the request
after the event repeats everything the one before it sent up to its observations block (the one part that
changes from call to call), and from the second call after it on at least 90 % of the input is read from
the cache. When something earlier does move, the cache-break diagnosis names it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from nova.agent.builder import AgentOptions, build_agent
from nova.cli.commands.cli_settings import settings_from_cli
from nova.cli.commands.run import run_task
from nova.context.cache_diagnosis import CacheMonitor, first_changed, request_segments
from nova.context.cache_sim import (
    AnthropicCache,
    OpenAICache,
    ProviderCache,
    hit_rate,
    request_usage,
    volatile_tail,
)
from nova.context.extensions import Extension, LatePoller
from nova.context.skill_block import wrap_body
from nova.messages import Message, TextPart
from nova.model import ModelRequest, Usage
from nova.testing import FunctionProvider, call, reply
from nova.tokens.counters import CL100K_PROFILE, HeuristicCounter

COUNTER = HeuristicCounter(CL100K_PROFILE)


class Scripted:
    """Each prompt: read a file, then answer. Keeps every request the agent sent."""

    def __init__(self) -> None:
        self.provider = FunctionProvider(self.answer)

    def answer(self, request: ModelRequest) -> reply:
        newest = [m for m in request.messages if m.origin != "context"][-1]
        if newest.has("tool_result"):
            return reply("done: the notes say to keep the API")
        return reply(tool_calls=[call("read_file", path="notes.txt")])

    @property
    def requests(self) -> list[ModelRequest]:
        return self.provider.requests


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / ".git").mkdir()
    (project / "notes.txt").write_text("keep the public API of utils/dates.py unchanged\n")
    (project / "AGENTS.md").write_text("Use four spaces. " * 40 + "\n")
    return project


def _kept_prefix(before: ModelRequest, after: ModelRequest) -> bool:
    """`after` repeats every segment of `before` but its trailing observations."""
    old = request_segments(before)
    changed = first_changed(old, request_segments(after))
    return changed is None or changed >= len(old) - volatile_tail(before.messages)


def _usages(requests: Sequence[ModelRequest], cache: ProviderCache) -> list[Usage]:
    return [request_usage(cache, r, COUNTER) for r in requests]


def _assert_survives(requests: Sequence[ModelRequest], event_at: int) -> None:
    """`event_at`: the index of the first request after the event."""
    assert _kept_prefix(requests[event_at - 1], requests[event_at])
    for cache in (AnthropicCache(), OpenAICache()):
        later = _usages(requests, cache)[event_at + 1:]
        assert later, "calls follow the event"
        total = sum(later, Usage())
        rate = hit_rate(total)
        assert rate is not None and rate >= 0.9, (type(cache).__name__, rate)


def test_the_prefix_survives_a_resume(tmp_path: Path, nova_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOVA_HOME", str(nova_home))
    project, script = _project(tmp_path), Scripted()
    settings = settings_from_cli(provider="demo", model="nova-demo")
    options = AgentOptions(cwd=project, yes=True, max_steps=10)
    first = run_task(settings, script.provider, options, "Read the notes and tell me the rule.", quiet=True)
    before = len(script.requests)
    run_task(settings, script.provider, options, "Read them again and confirm.", quiet=True,
             resume_id=str(first["session_id"]))
    assert len(script.requests) > before + 1
    _assert_survives(script.requests, before)


class RecallOnSecondTurn(Extension):
    """Recalls a memory block into the second turn, the way the memory runtime inserts one."""

    def __init__(self) -> None:
        self.turns = 0

    def on_turn_start(self, *, user: Message) -> LatePoller | None:
        self.turns += 1
        if self.turns != 2:
            return None
        block = Message(role="user", parts=(TextPart('<memory name="style">Prefer small functions.</memory>'),),
                        origin="memory", metadata={"memories": ["style"]})
        given = [block]
        return lambda: given.pop() if given else None


def _agent(tmp_path: Path, script: Scripted, extensions: Sequence[Extension] = ()):  # type: ignore[no-untyped-def]
    settings = settings_from_cli(provider="demo", model="nova-demo")
    return build_agent(settings, script.provider, AgentOptions(cwd=_project(tmp_path), yes=True, max_steps=10),
                       extra_extensions=extensions)


def test_the_prefix_survives_a_memory_block(tmp_path: Path, nova_home: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOVA_HOME", str(nova_home))
    script = Scripted()
    agent = _agent(tmp_path, script, [RecallOnSecondTurn()])
    agent.run_turn("Read the notes and tell me the rule.")
    before = len(script.requests)
    agent.run_turn("Now read them again.")
    assert any(m.origin == "memory" for m in script.requests[before].messages), "the block was sent"
    _assert_survives(script.requests, before)


def test_the_prefix_survives_a_skill_body(tmp_path: Path, nova_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOVA_HOME", str(nova_home))
    script = Scripted()
    agent = _agent(tmp_path, script)
    agent.run_turn("Read the notes and tell me the rule.")
    before = len(script.requests)
    body = wrap_body(name="dates", version="1.0.0", folder="/skills/dates", body="Parse with fromisoformat. " * 30)
    agent.run_turn(f"{body}\n\nUse the dates skill and read the notes again.")
    assert any('<skill name="dates"' in m.text for m in script.requests[before].messages), "the body was sent"
    _assert_survives(script.requests, before)


def test_the_diagnosis_names_the_segment_that_moved(tmp_path: Path, nova_home: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # The project's rule file edited between a run and its resume: the one segment before the history that
    # moves. The diagnosis, fed the simulated cache's reads, names it.
    monkeypatch.setenv("NOVA_HOME", str(nova_home))
    project, script = _project(tmp_path), Scripted()
    settings = settings_from_cli(provider="demo", model="nova-demo")
    options = AgentOptions(cwd=project, yes=True, max_steps=10)
    first = run_task(settings, script.provider, options, "Read the notes and tell me the rule.", quiet=True)
    before = len(script.requests)
    (project / "AGENTS.md").write_text("Use tabs. " * 40 + "\n")
    run_task(settings, script.provider, options, "Read them again and confirm.", quiet=True,
             resume_id=str(first["session_id"]))
    assert not _kept_prefix(script.requests[before - 1], script.requests[before])
    monitor, cache = CacheMonitor(model="claude-sonnet-4-5"), AnthropicCache()
    reports = [monitor.observe(r, u, at=float(i)) for i, (r, u) in
               enumerate(zip(script.requests, _usages(script.requests, cache), strict=True))]
    named = [(i, r.segment, r.cause) for i, r in enumerate(reports) if r is not None]
    assert named == [(before, "rules", "rules changed")]
