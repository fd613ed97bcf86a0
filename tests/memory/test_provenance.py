"""Revocation follows provenance: once a memory is revoked, the next view of a session that used it
shows none of its text — not the recall block, not a compaction summary written while it was active
that quoted it, not a task-state entry, not the model's own earlier reply. Real agents, real files;
the model is a `FunctionProvider` that records what each main call was shown."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nova.agent.builder import AgentOptions, build_agent
from nova.agent.context_runtime import ContextRuntime
from nova.cli.commands.memory import app as memory_app
from nova.memory.provenance import ProvenanceLog, RevocationRegistry, Revoked, scrub_text
from nova.memory.store import MemoryStore
from nova.messages import Message, SummaryPart
from nova.model import ModelRequest
from nova.settings import load_settings
from nova.testing import FunctionProvider

BODY = "Deploys go to the staging host orion-7 on port 8443 with the blue-green script."
SECRETISH = ("orion", "8443", "blue-green")


@pytest.fixture()
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    home, project = tmp_path / "home", tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    home.mkdir()
    (home / "config.json").write_text(json.dumps({"memory": {"recall_grace_s": 5}}))
    monkeypatch.setenv("NOVA_HOME", str(home))
    monkeypatch.chdir(project)
    return {"home": home, "project": project}


def agent_for(world: dict[str, Path], seen: list[str], *, session_id: str, history: list[Message] | None = None):  # type: ignore[no-untyped-def]
    def model(request: ModelRequest) -> str:
        if request.metadata.get("purpose") in ("memory_recall", "memory_extraction"):
            return "NONE"
        seen.append("\n".join(m.text + "".join(p.content for p in m.tool_results()) for m in request.messages))
        return "Noted: the deploy target is orion-7 on port 8443 using the blue-green script."

    settings = load_settings(home=world["home"], env={}, overrides={"provider": "demo", "model": "demo"})
    return build_agent(settings, FunctionProvider(model), AgentOptions(cwd=world["project"]),
                       session_id=session_id, history=history or [])


def test_revocation_removes_the_memory_from_the_next_view_even_where_a_summary_quoted_it(
        world: dict[str, Path]) -> None:
    runner = CliRunner()
    assert runner.invoke(memory_app, ["add", "--type", "project", "--name", "deploy-target",
                                      "--description", "where deploys go", BODY]).exit_code == 0
    seen: list[str] = []
    agent = agent_for(world, seen, session_id="ses_one")
    try:
        agent.run_turn("how do deploys work? staging host port")
        assert "orion-7" in seen[-1]  # recalled while active
        recall_ids = [m.id for m in agent.history if m.origin == "memory"]
        assert recall_ids
        # A compaction summary written while the memory was active, quoting it, and a task-state entry.
        summary = Message(role="user", origin="summary", parts=(SummaryPart(
            text="Earlier work: the user asked about deploys.\nRecalled notes: deploys go to the staging host "
                 "orion-7 on port 8443.\nThe user then asked for a README fix.",
            covers=tuple(m.id for m in agent.history)),))
        history = [summary, Message.user("now fix the README typo"), Message.assistant("Fixed.")]
        runtime = agent.extensions.require(ContextRuntime)
        runtime.state.update(lambda s: replace(s, open_items=("check the staging host orion-7 on port 8443",
                                                              "fix the README typo")))
        state = runtime.state
    finally:
        agent.close()

    # The summary is recorded as derived from the memory once a view has mounted it.
    resumed = agent_for(world, seen, session_id="ses_one", history=history)
    resumed.extensions.require(ContextRuntime).state = state
    try:
        resumed.run_turn("what next?")
        assert "orion-7" in seen[-1]
    finally:
        resumed.close()
    uses = ProvenanceLog.for_memory_dir(world["home"] / "memory").uses_of("deploy-target")
    assert {u["kind"] for u in uses} == {"view", "summary"}

    result = runner.invoke(memory_app, ["forget", "deploy-target"])
    assert result.exit_code == 0, result.output
    assert "revoked 'deploy-target'" in result.output
    assert "1 view(s) and 1 summary(ies) in 1 session(s): ses_one" in result.output

    later = agent_for(world, seen, session_id="ses_one", history=[*history, *resumed.history[len(history):]])
    later.extensions.require(ContextRuntime).state = state
    try:
        later.run_turn("and after that?")
    finally:
        later.close()
    shown = seen[-1]
    for word in SECRETISH:
        assert word not in shown, shown
    assert "[removed: text from revoked memory 'deploy-target']" in shown
    assert "The user then asked for a README fix." in shown  # the rest of the summary stays
    assert "fix the README typo" in shown  # the task state's other entries stay

    # A new session in the project: not recalled, nothing derived shown.
    fresh: list[str] = []
    other = agent_for(world, fresh, session_id="ses_two")
    try:
        other.run_turn("how do deploys work? staging host port")
    finally:
        other.close()
    assert not any(word in fresh[-1] for word in SECRETISH)


def test_approving_a_revoked_memory_again_lifts_its_redaction(world: dict[str, Path]) -> None:
    runner = CliRunner()
    runner.invoke(memory_app, ["add", "--type", "user", "--name", "editor", "I use helix as my editor daily"])
    assert runner.invoke(memory_app, ["forget", "editor"]).exit_code == 0
    registry = RevocationRegistry.for_memory_dir(world["home"] / "memory")
    assert registry.get("editor") is not None
    assert runner.invoke(memory_app, ["approve", "editor"]).exit_code == 0
    assert registry.get("editor") is None


def test_a_memory_that_quotes_a_revoked_one_goes_back_to_review(world: dict[str, Path]) -> None:
    runner = CliRunner()
    runner.invoke(memory_app, ["add", "--type", "project", "--name", "deploy-target", BODY])
    runner.invoke(memory_app, ["add", "--type", "project", "--name", "deploy-skill",
                               f"Skill: before release, {BODY}"])
    result = runner.invoke(memory_app, ["forget", "deploy-target"])
    assert "'deploy-skill' quotes it: back to review" in result.output
    store = MemoryStore.for_workspace(home=world["home"], cwd=world["project"])
    assert store.get("deploy-skill").status == "candidate"


def test_scrubbing_keeps_unrelated_lines_and_the_user_s_words() -> None:
    revoked = (Revoked(name="m", description="", body=BODY),)
    text, names = scrub_text("Plan:\nthe staging host orion-7 on port 8443 is the target\nrun the tests", revoked)
    assert names == ["m"] and "orion" not in text and "run the tests" in text
    # Three shared words are not a quote outside a session that used the memory ...
    assert scrub_text("go to the staging area", revoked)[1] == []
    # ... but are inside one.
    assert scrub_text("we go to the staging area", revoked, strict_names=frozenset({"m"}))[1] == ["m"]


def test_the_request_itself_is_scrubbed_last(tmp_path: Path) -> None:
    """Text that enters the view after history was scrubbed (a summary written in this very call, the
    pinned task state) is caught when the request leaves."""
    from nova.memory.provenance import ProvenanceGuard

    guard = ProvenanceGuard.for_home_memory_dir(tmp_path, session_id="s")
    request = ModelRequest(model="m", messages=[
        Message.user("what is the deploy target? orion-7 on port 8443 with the blue-green script"),
        Message(role="user", origin="summary", parts=(SummaryPart(text=f"Summary: {BODY}", covers=("x",)),)),
    ])
    assert guard.prepare_request(request=request) is request  # nothing revoked: untouched
    guard.registry.add(Revoked(name="deploy-target", description="", body=BODY))
    sent = guard.prepare_request(request=request)
    assert "orion" in sent.messages[0].text  # the user's own words stay
    assert "orion" not in sent.messages[1].text and "revoked memory 'deploy-target'" in sent.messages[1].text
