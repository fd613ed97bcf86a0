"""Replaying a Nova session at the window and policy it ran with reproduces the live run: the same
compactions at the same calls, every call's input within 2 % of what the live call recorded.

The live runs are real sessions (`build_agent`, real tools on a real project, the session recorded in a
real store); only the model is scripted. Its usage is counted as a provider would: with Nova's own
counter, or 8 % above it (a provider whose tokenizer is not Nova's: the live ledger anchors on those
figures, so the replay has to as well to compact where the live run did). The demo's session is
replayed through `nova replay`, as a user would.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nova.agent.builder import AgentOptions, build_agent, record_fixed_prompt
from nova.agent.context_runtime import ContextRuntime
from nova.cli.main import app
from nova.evaluation.replay import ReplayReport, replay_session
from nova.messages import Message
from nova.model import ModelRequest, ModelResponse, ResponseDone, Usage, usage_of
from nova.sessions.importers import read_session_file
from nova.sessions.session import Session
from nova.sessions.transcript import Transcript
from nova.settings import Settings, load_settings
from nova.testing import FunctionProvider, ScriptedProvider, call, reply
from nova.tokens import count_message, count_system, count_tools, counter_for_model

WINDOW = 24_000
MODEL = "nova-demo"
TOLERANCE = 0.02


def _project(root: Path) -> Path:
    """Modules from 2 to 13 KB (the larger ones over the spill limit at this window), and a test."""
    root.mkdir()
    for i in range(12):
        lines = (f"def function_{i}_{j}(value):\n    return value * {j} + {i}  # step {j}\n" for j in range(40 + 25 * i))
        (root / f"module_{i}.py").write_text("".join(lines))
    (root / "test_mod.py").write_text("import unittest\n\n\nclass T(unittest.TestCase):\n"
                                      "    def test_ok(self):\n        self.assertTrue(True)\n")
    return root


def _stepper(usage_scale: float) -> Callable[..., object]:
    """A scripted model step: answers `text` with `calls`, its usage counted as a provider would."""
    counter = counter_for_model(MODEL)

    def step(text: str, *calls: object) -> object:
        def answer(request: ModelRequest) -> reply:
            sent = (count_system(request.system, counter) + count_tools(request.tools, counter)
                    + sum(count_message(m, counter) for m in request.messages))
            usage = Usage(input_tokens=round(sent * usage_scale), output_tokens=counter.count(text) + 20 * len(calls))
            return reply(text, list(calls), usage=usage)  # type: ignore[arg-type]

        return answer

    return step


def _script(usage_scale: float) -> tuple[list[object], ...]:
    """Three turns of tool calls: reads (large results), searches, test runs (test evidence in task
    state), a task-state proposal and a shell listing two files at once; then all of it again; then a
    few more."""
    step = _stepper(usage_scale)

    def reading(again: str) -> list[object]:
        turn: list[object] = []
        for i in range(12):
            turn.append(step(f"Reading module {i}{again}.", call("read_file", path=f"module_{i}.py")))
            if i % 3 == 2:
                turn.append(step("Searching.", call("grep", pattern=f"function_{i}_1", path=".")))
            if i % 4 == 3:
                turn.append(step("Running the tests.",
                                 call("bash", command=f"{sys.executable} -m unittest test_mod 2>&1")))
        return turn

    first = [*reading(""),
             step("Proposing a plan.", call("propose_task_update", plan=["read", "test"], open_items=["module 3"])),
             step("Listing.", call("bash", command="ls -la; cat module_1.py module_2.py")),
             step("First turn done.")]
    second = [*reading(" again"), step("Second turn done.")]
    third = [step("Reading again.", call("read_file", path="module_11.py")),
             step("And the tests.", call("bash", command=f"{sys.executable} -m unittest -v test_mod 2>&1")),
             step("Part of module 5.", call("read_file", path="module_5.py", offset=1, limit=40)),
             step("Third turn done.")]
    return first, second, third


def _long_script(usage_scale: float, calls: int) -> tuple[list[object], ...]:
    """`calls` model calls over four turns, every turn reading, searching and testing round the modules
    (each read's result differs from the last: a window of the file that moves), a shell step now and
    then; each turn ends with a plain answer."""
    step = _stepper(usage_scale)
    per_turn = calls // 4
    turns: list[list[object]] = []
    for turn in range(4):
        steps: list[object] = []
        for k in range(per_turn - 1):
            n = turn * per_turn + k
            module = n % 12
            if k % 7 == 6:
                steps.append(step(f"Running the tests ({n}).",
                                  call("bash", command=f"{sys.executable} -m unittest test_mod 2>&1")))
            elif k % 5 == 4:
                steps.append(step(f"Searching ({n}).", call("grep", pattern=f"function_{module}_{n % 9}", path=".")))
            else:
                steps.append(step(f"Reading module {module} ({n}).",
                                  call("read_file", path=f"module_{module}.py", offset=1 + n % 30, limit=60)))
        steps.append(step(f"Turn {turn + 1} done."))
        turns.append(steps)
    return tuple(turns)


PROMPTS = ("Read every module of this project, run the tests, and say what the functions do.",
           "Read them all once more: I want the differences between them.",
           "Now look at module 11 again and rerun the tests verbosely.")


def _live_session(home: Path, work: Path, *, usage_scale: float, summarizer: str = "extractive",
                  long_calls: int = 0) -> tuple[Settings, Path]:
    """`long_calls`: the long script of that many calls instead of the three turns of `_script`."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.json").write_text(json.dumps({"compaction": {"summarizer": summarizer}}))
    settings = load_settings(home=home, overrides={"provider": "demo", "model": MODEL, "context_window": WINDOW})
    turns = _long_script(usage_scale, long_calls) if long_calls else _script(usage_scale)
    script = ScriptedProvider([step for turn in turns for step in turn])  # type: ignore[misc]

    def answer(request: ModelRequest) -> ModelResponse:
        if request.messages and request.messages[-1].origin == "summary_request":  # the model summarizer
            return ModelResponse(message=Message.assistant("## Progress\nRead the modules; tests pass."),
                                 usage=Usage(input_tokens=1000, output_tokens=20), stop_reason="end_turn")
        done = list(script.stream(request))[-1]
        assert isinstance(done, ResponseDone)
        return done.response

    provider = FunctionProvider(answer)
    with Session.create(home, cwd=work, provider="demo", model=MODEL) as session:
        agent = build_agent(settings, provider, AgentOptions(cwd=work, yes=True), session=session,
                            session_id=session.id, session_dir=session.dir)
        record_fixed_prompt(session, agent)
        agent.run_turn(PROMPTS[0])
        runtime = agent.extensions.get(ContextRuntime)
        assert runtime is not None
        runtime.command("/goal explain every module")  # task state from outside the messages
        for prompt in (*PROMPTS[1:], *(["And once more, the remaining modules."] * (len(turns) - 3))):
            agent.run_turn(prompt)
        agent.close()
        assert script.remaining == 0
        return settings, session.dir


def _live_calls(session_dir: Path) -> tuple[list[int], list[int]]:
    """Each live call's recorded input, and the calls (1-based) a compaction came before."""
    inputs: list[int] = []
    compacted: list[int] = []
    for record in Transcript(session_dir / "transcript.jsonl").iter_records():
        kind = getattr(record, "type", "")
        if kind == "compact_boundary":
            compacted.append(len(inputs) + 1)
        message = getattr(record, "message", None)
        if message is not None and message.role == "assistant":
            usage = usage_of(message)
            assert usage is not None
            inputs.append(usage.context_tokens)
    return inputs, compacted


def _compactions(report: ReplayReport) -> list[int]:
    return [i + 1 for i, c in enumerate(report.per_call) if c.event == "compaction"]


def _assert_reproduces(report: ReplayReport, live: list[int], compacted: list[int]) -> None:
    assert report.calls == len(live)
    assert _compactions(report) == compacted
    for number, (call_, recorded) in enumerate(zip(report.per_call, live, strict=True), start=1):
        assert abs(call_.input_tokens - recorded) <= TOLERANCE * recorded, f"call {number}"
    assert report.invariant_violations == 0


@pytest.mark.parametrize("usage_scale", [1.0, 1.08], ids=["counted-like-nova", "tokenizer-8pct-over"])
def test_a_scripted_session_replays_as_it_ran(tmp_path: Path, usage_scale: float) -> None:
    settings, session_dir = _live_session(tmp_path / "home", _project(tmp_path / "work"), usage_scale=usage_scale)
    live, compacted = _live_calls(session_dir)
    # Repeated compactions (a later one folds the earlier summary) for this test to mean anything.
    assert len(compacted) >= 2

    imported = read_session_file(session_dir)
    # The record holds what the calls were sent besides the messages, and what the pipeline did.
    assert imported.tools and imported.system and imported.meta.get("model") == MODEL
    assert imported.pipeline is not None and imported.pipeline.compactions
    assert any(s.state.get("evidence") for s in imported.pipeline.task_states)
    assert any(s.state.get("goal") for s in imported.pipeline.task_states)

    report = replay_session(imported, window=WINDOW, policy="nova", config=settings.compaction,
                            spill=settings.spill, counter=counter_for_model(MODEL))
    _assert_reproduces(report, live, compacted)
    # Every view was the recorded one, and the counter's own measure of it says so too, to the token
    # (the provider counted the request with the same counter, scaled): the system prompt, the tools,
    # the pinned task state, the environment, every spill, cut and the compaction's restore included.
    assert report.recorded_calls == report.calls
    for number, (call_, recorded) in enumerate(zip(report.per_call, live, strict=True), start=1):
        assert abs(call_.counted * usage_scale - recorded) <= 1, f"call {number}"


def test_a_scripted_200_call_session_replays_as_it_ran(tmp_path: Path) -> None:
    settings, session_dir = _live_session(tmp_path / "home", _project(tmp_path / "work"), usage_scale=1.08,
                                          long_calls=200)
    live, compacted = _live_calls(session_dir)
    assert len(live) == 200
    assert len(compacted) >= 5  # compaction after compaction, each folding the summary before it
    report = replay_session(read_session_file(session_dir), window=WINDOW, policy="nova", config=settings.compaction,
                            spill=settings.spill, counter=counter_for_model(MODEL))
    _assert_reproduces(report, live, compacted)
    assert report.recorded_calls == report.calls
    assert report.peak_context_tokens == pytest.approx(max(live), rel=TOLERANCE)
    assert report.input_tokens == pytest.approx(sum(live), rel=TOLERANCE)


def test_a_replay_at_another_window_measures_its_own_views(tmp_path: Path) -> None:
    settings, session_dir = _live_session(tmp_path / "home", _project(tmp_path / "work"), usage_scale=1.08)
    imported = read_session_file(session_dir)
    smaller = replay_session(imported, window=16_000, policy="nova", config=settings.compaction,
                             spill=settings.spill, counter=counter_for_model(MODEL))
    # The views part from the recorded ones at the first decision the smaller window makes differently;
    # from there on no usage of the recording is the count of a view sent: each is the counter's figure,
    # as far off as it was on the last recorded view (the scripted provider counts 8 % over it).
    assert 0 < smaller.recorded_calls < smaller.calls
    unrecorded = [c for c in smaller.per_call if not c.recorded]
    assert all(c.input_tokens == pytest.approx(c.counted * 1.08, rel=0.005) for c in unrecorded)
    assert smaller.requests_over_window == 0 and smaller.invariant_violations == 0
    # Without the pipeline record (a session from elsewhere) nothing is taken as recorded.
    foreign = replay_session(replace(imported, pipeline=None), window=WINDOW, policy="nova",
                             config=settings.compaction, spill=settings.spill, counter=counter_for_model(MODEL))
    assert foreign.recorded_calls == 0


def test_a_model_written_summary_parts_the_views(tmp_path: Path) -> None:
    """The replay has no model to summarize with: where the live run compacted with a model summary, the
    replay's extracted one is another view, and it says so: from that compaction on it measures its own
    views by the counter (scaled as the counter was off on the recorded views) instead of taking the
    recorded usage for theirs."""
    settings, session_dir = _live_session(tmp_path / "home", _project(tmp_path / "work"), usage_scale=1.08,
                                          summarizer="model")
    _, compacted = _live_calls(session_dir)
    report = replay_session(read_session_file(session_dir), window=WINDOW, policy="nova",
                            config=settings.compaction, spill=settings.spill, counter=counter_for_model(MODEL))
    assert report.recorded_calls == compacted[0] - 1
    assert _compactions(report)[0] == compacted[0]
    assert all(c.input_tokens == pytest.approx(c.counted * 1.08, rel=0.005) for c in report.per_call[compacted[0] - 1:])
    assert not any(c.recorded for c in report.per_call[compacted[0] - 1:])
    assert report.per_call[: compacted[0] - 1] == [c for c in report.per_call if c.recorded]


def test_the_demo_session_replays_as_it_ran(tmp_path: Path, nova_home: Path) -> None:
    runner = CliRunner()
    demo = runner.invoke(app, ["demo", "--dir", str(tmp_path / "project"), "--json"])
    assert demo.exit_code == 0, demo.output
    session_id = json.loads(demo.output)["session_id"]
    session_dir = nova_home / "sessions" / session_id
    live, compacted = _live_calls(session_dir)
    assert compacted

    # The session directory, and its export (a file elsewhere, whose calls still name that directory).
    exported = tmp_path / "export.jsonl"
    assert runner.invoke(app, ["sessions", "export", session_id, "-o", str(exported)]).exit_code == 0
    for recording in (session_dir, exported):
        replayed = runner.invoke(app, ["replay", str(recording), "--window", "32000", "--json"])
        assert replayed.exit_code == 0, replayed.output
        data = json.loads(replayed.output.strip().splitlines()[-1])
        assert "placeholder_tokens" not in data  # the recording has its own system prompt and tools
        assert [i + 1 for i, c in enumerate(data["per_call"]) if c["event"] == "compaction"] == compacted
        assert data["compactions"] == len(compacted) and data["recorded_calls"] == len(live)
        for number, (call_, recorded) in enumerate(zip(data["per_call"], live, strict=True), start=1):
            assert abs(call_["input_tokens"] - recorded) <= TOLERANCE * recorded, f"{recording.name} call {number}"
        assert data["input_tokens"] == pytest.approx(sum(live), rel=TOLERANCE)
    # The demo model counts what it is sent with Nova's own counter: the replay's views, measured by the
    # counter alone, are the live requests to the token.
    report = replay_session(read_session_file(session_dir), window=32_000, policy="nova",
                            counter=counter_for_model(MODEL))
    assert [c.counted for c in report.per_call] == live
