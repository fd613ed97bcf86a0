"""Property: with the sandbox on, no generated command line gets out, whatever the rules would have said.

Each example is drawn from the escape corpus's pieces (nova.evaluation.escapes): a target outside the
workspace or among Nova's protected files, a way of writing to it, a disguise the shell parser cannot
see through (or a case of its own: a hard link, a folder moved aside, `git checkout --`, a push, a
deletion, a connection), and runs through the `bash` tool in the sandbox with no permission policy in
front of it. Afterwards nothing outside the workspace changed, no protected file changed or appeared,
nothing planted for git ran on the user's next `git status`/`git commit`, the listener on loopback got no
connection and the server token was not printed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nova.evaluation.escapes import Escape, EscapeWorld, Runner, blocks, compose
from nova.tools.policy.sandbox import bubblewrap_problem


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EscapeWorld]:
    problem = bubblewrap_problem()
    if problem:
        pytest.skip(problem)
    made = EscapeWorld.create(tmp_path_factory.mktemp("escapes") / "world")
    try:
        yield made
    finally:
        made.close()


def escapes(world: EscapeWorld) -> st.SearchStrategy[Escape]:
    targets, writers, disguises, specials = blocks(world)
    composed = st.builds(lambda t, w, d, v: compose(t, w, d, variable=v), st.sampled_from(targets),
                         st.sampled_from(writers), st.sampled_from(disguises), st.booleans())
    return st.one_of(composed, st.sampled_from(specials))


def _check(world: EscapeWorld, escape: Escape) -> None:
    outcome = Runner(world, "sandbox").run(escape)
    assert outcome.stopped_by == "sandbox", (escape.name, escape.command, outcome.effects)


_FAST = settings(max_examples=20, deadline=None, derandomize=True,
                 suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def test_no_generated_command_gets_out_of_the_sandbox(world: EscapeWorld) -> None:
    @_FAST
    @given(escape=escapes(world))
    def run(escape: Escape) -> None:
        _check(world, escape)

    run()


@pytest.mark.slow
def test_no_generated_command_gets_out_of_the_sandbox_extended(world: EscapeWorld) -> None:
    @settings(max_examples=400, deadline=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(escape=escapes(world))
    def run(escape: Escape) -> None:
        _check(world, escape)

    run()


def test_the_judge_sees_an_escape_when_there_is_no_sandbox(world: EscapeWorld, tmp_path: Path) -> None:
    """The property could not fail if the judge saw nothing: without the sandbox (and without the
    policy) the same pieces do get out."""
    targets, _, _, specials = blocks(world)
    other = EscapeWorld.create(tmp_path / "unsandboxed")
    try:
        runner = Runner(other, "bare")
        bashrc = next(t for t in blocks(other)[0] if t.name == "bashrc")
        planted = runner.run(compose(bashrc, "python", "plain"))
        assert planted.stopped_by == "" and any(".bashrc" in e for e in planted.effects), planted
        connect = next(e for e in blocks(other)[3] if e.name == "connect:9")  # a script: no parser sees it
        assert runner.run(connect).effects == ("connected to the listener",)
    finally:
        other.close()
    assert targets and specials
