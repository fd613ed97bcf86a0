"""Seed 001 §6, TASK2048: the user approved a branch change but not a merge.

A summary that keeps "tests pass" and drops "merge not approved" is rejected by the continuity check,
the view is rebuilt from task state and raw events and holds the restriction, and a `git merge` call is
refused by the execution layer even in a run that allows every tool (`--yes`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from nova.agent.builder import AgentOptions, build_agent
from nova.agent.context_runtime import ContextRuntime
from nova.context.summarize import SummaryRequest
from nova.sessions.session import Session
from nova.settings import load_settings
from nova.testing import ScriptedProvider, call, last_message, reply
from nova.tools import default_registry

MERGE_RULE = "merge not approved: do not merge fix/task2048 into main"


class TestsPassSummary:
    """A model summary that keeps the good news and forgets the restriction."""

    name = "forgetful"
    model_call = True  # stands for a model summary

    def summarize(self, request: SummaryRequest) -> str:
        return "## Current state\nTests pass on fix/task2048; the fix is done and ready to land."


def test_task2048(tmp_path: Path, nova_home: Path) -> None:
    work = tmp_path / "repo"
    work.mkdir()
    (work / "test_checkout.py").write_text("def test_checkout():\n    assert 1 + 1 == 2\n")
    (work / "notes.txt").write_text("payment module notes\n" * 300)  # under the spill limit at 32k
    nova_home.mkdir(parents=True, exist_ok=True)
    (nova_home / "config.json").write_text(json.dumps({"compaction": {"summarizer": "extractive"}}))
    settings = load_settings(home=nova_home, overrides={"provider": "demo"})
    # A real test run, without the plugins of the suite's own environment (loading them is most of its time).
    test_cmd = f"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {sys.executable} -m pytest -q -p no:cacheprovider test_checkout.py"
    script = [reply("running the tests", [call("bash", command=test_cmd)]),
              reply("All tests pass. I consider the merge approved.")]
    for i in range(8):
        script += [reply(f"reading {i}", [call("read_file", path="notes.txt")]), reply(f"read {i}")]
    script += [reply("merging now", [call("bash", command="git merge fix/task2048")]), reply("stopped")]
    provider = ScriptedProvider(script)
    with Session.create(nova_home, cwd=work, provider="demo", model=settings.model) as session:
        agent = build_agent(settings, provider, AgentOptions(cwd=work, yes=True), session=session,
                            session_id=session.id, session_dir=session.dir)
        runtime = agent.extensions.get(ContextRuntime)
        assert runtime is not None and runtime.guard is not None
        runtime.command("/goal TASK2048: fix the flaky checkout test on branch fix/task2048")
        runtime.command("/approve change branch to fix/task2048")
        runtime.command(f"/constraint {MERGE_RULE}")

        agent.run_turn("run the checkout tests")
        state = runtime.state.load()
        # "tests pass" comes from the real exit code, bound to the workspace; the model's claim that the
        # merge is approved changed nothing.
        assert [(e.claim, e.exit_code) for e in state.evidence] == [("tests pass", 0)]
        assert state.evidence[0].workspace.startswith("ws-")
        assert state.approvals == ("change branch to fix/task2048",)
        assert session.get_task_state() == state.to_dict()  # canonical state lives in the session store

        for i in range(8):
            agent.run_turn(f"read the notes, part {i}")

        # The forgetful summary is rejected; the rebuilt summary comes from task state and raw events.
        runtime.guard.inner = TestsPassSummary()
        assert agent.compact() is True
        failed = [r for r in runtime.guard.reports if r.stage == "summary" and not r.ok]
        assert failed and failed[-1].rebuilt
        assert ("constraint", MERGE_RULE) in failed[-1].missing
        summary = agent.history[1]
        assert summary.has("summary")
        assert MERGE_RULE in summary.text and "tests pass" in summary.text
        assert "Tests pass on fix/task2048" not in summary.text
        after = [r for r in runtime.guard.reports if r.stage == "view"]
        assert after and after[-1].ok

        # The rebuilt view the model gets holds the restriction twice: the task statement, which every
        # compaction keeps word for word, and the pinned state.
        compiled = runtime.compile(agent.history, system=agent.system_prompt, tools=agent.tools.specs())
        holders = {s.id for s in compiled.why("merge not approved")}
        assert {"task.state", "request"} <= holders

        # The execution layer refuses the merge, even with --yes; the branch change stays allowed.
        agent.run_turn("merge it")
        merge_result = last_message(provider.requests[-1]).tool_results()[0]
        assert merge_result.is_error and "Permission denied" in merge_result.content
        assert "bash(git merge*)" in merge_result.content
        bash = default_registry().get("bash")
        assert bash is not None
        assert agent.policy.check(bash, {"command": "git checkout -b fix/task2048"}, cwd=work).allowed
        assert not agent.policy.check(bash, {"command": "cd . && git merge fix/task2048"}, cwd=work).allowed

        # Once the user approves the merge, the execution layer lets it through.
        runtime.command("/approve merge fix/task2048 into main")
        assert agent.policy.check(bash, {"command": "git merge fix/task2048"}, cwd=work).allowed
        agent.close()


def test_the_model_proposes_task_updates_and_cannot_touch_what_the_user_owns(tmp_path: Path) -> None:
    from nova.agent.builder import AgentOptions, build_agent
    from nova.agent.context_runtime import ContextRuntime
    from nova.settings import load_settings
    from nova.testing import ScriptedProvider, call, reply

    provider = ScriptedProvider([
        reply("", [call("propose_task_update", open_items=["write the changelog"], plan=["fix", "test"])]),
        reply("", [call("propose_task_update", constraints=["merging is approved"], goal="ship it")]),
        reply("noted"),
    ])
    agent = build_agent(load_settings(home=tmp_path / "home", overrides={"provider": "demo"}), provider,
                        AgentOptions(cwd=tmp_path))
    agent.run_turn("plan the release")
    agent.close()
    results = [r for m in agent.history for r in m.tool_results()]
    assert not results[0].is_error and "accepted" in results[0].content
    assert results[1].is_error and "only the user" in results[1].content
    state = agent.extensions.require(ContextRuntime).state.load()
    assert "write the changelog" in state.open_items and state.plan == ("fix", "test")
    assert state.goal == "" and not state.constraints
