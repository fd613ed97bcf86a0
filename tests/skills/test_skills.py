"""Skills (SKL-1, SKL-2): an ecosystem SKILL.md loads unchanged, the index sits in the cached head, the
body loads on demand as its own manifest segment, and an active skill's declared permissions are the
most it may use. Real files, the real agent assembly, scripted providers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nova.agent.builder import AgentOptions, build_agent
from nova.agent.context_runtime import ContextRuntime
from nova.cli.main import app
from nova.messages import ToolUsePart
from nova.settings import load_settings
from nova.skills.catalog import load_catalog, skill_trust_item
from nova.testing import ScriptedProvider, call, last_message, reply
from nova.tools.policy.trust import TrustStore

# Written the way Claude Code's skills are: only `name`, `description`, `allowed-tools`, then Markdown.
ECOSYSTEM_BODY = """# PDF Processing

## Quick start

Use pdfplumber to extract text:

```python
import pdfplumber
with pdfplumber.open("doc.pdf") as pdf:
    text = pdf.pages[0].extract_text()
```

For form filling, see [FORMS.md](FORMS.md). Run `python scripts/check.py $ARGUMENTS` first.
"""
ECOSYSTEM_SKILL = f"""---
name: pdf-processing
description: Extract text and tables from PDF files, fill forms, merge documents. Use when working with PDF files or when the user mentions PDFs, forms, or document extraction.
allowed-tools: Read, Grep, Glob
---

{ECOSYSTEM_BODY}"""

NOVA_SKILL = """---
name: release-notes
description: Write release notes into out/ from the git log.
version: 2.0.0
triggers: [release, changelog]
capabilities: [read-files, write-notes]
tools: [read_file, write_file, bash]
permissions:
  network: false
  files:
    write: ["out/**"]
source: https://example.org/skills/release-notes
review: {by: alice, date: "2026-11-02", notes: read line by line}
tests:
  - {name: has-template, run: "test -f template.md"}
---
Read the log, then write out/NOTES.md. Never push.
"""


def _load(skill: str, **more: str) -> ToolUsePart:
    """A scripted call of the `skill` tool (`call()` takes `name` for the tool itself)."""
    global _calls
    _calls += 1
    return ToolUsePart(id=f"toolu_skill{_calls}", name="skill", input={"name": skill, **more})


_calls = 0


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def project(tmp_path: Path, nova_home: Path) -> Path:
    work = tmp_path / "repo"
    (work / ".git").mkdir(parents=True)
    _write(work / ".claude" / "skills" / "pdf-processing" / "SKILL.md", ECOSYSTEM_SKILL)
    _write(work / ".claude" / "skills" / "pdf-processing" / "FORMS.md", "form notes\n")
    _write(work / ".nova" / "skills" / "release-notes" / "SKILL.md", NOVA_SKILL)
    _write(work / ".nova" / "skills" / "release-notes" / "template.md", "# Notes\n")
    _write(work / "src" / "app.py", "print('hi')\n")
    # release-notes declares a test command: a session offers it once the user trusted it (`nova trust`).
    items = [i for i in (skill_trust_item(s) for s in load_catalog(cwd=work, home=nova_home).sorted()) if i]
    TrustStore(nova_home).trust(work, items)
    return work


def _agent(home: Path, work: Path, provider: ScriptedProvider):  # type: ignore[no-untyped-def]
    settings = load_settings(home=home, overrides={"provider": "demo"})
    return build_agent(settings, provider, AgentOptions(cwd=work, yes=True))


def test_an_ecosystem_skill_loads_unchanged(project: Path, nova_home: Path) -> None:
    catalog = load_catalog(cwd=project, home=nova_home)
    skill = catalog.require("pdf-processing")
    assert skill.scope == "claude"
    assert skill.body == ECOSYSTEM_BODY.strip("\n")
    assert skill.description.startswith("Extract text and tables from PDF files")
    # Claude Code's `allowed-tools` names, in Nova's tools: the most the skill may use while active.
    assert skill.permissions.tools == frozenset({"read_file", "grep", "glob"})
    assert skill.version == "" and len(skill.digest) == 12

    provider = ScriptedProvider([
        reply("loading", [_load("pdf-processing", arguments="doc.pdf")]),
        reply("done"),
    ])
    agent = _agent(nova_home, project, provider)
    agent.run_turn("extract the text of doc.pdf")
    second = provider.requests[1]
    result = last_message(second).tool_results()[0]
    # The body arrives as written (only $ARGUMENTS filled in), wrapped so the compiler can find it.
    assert ECOSYSTEM_BODY.strip("\n").replace("$ARGUMENTS", "doc.pdf") in result.content
    assert result.content.startswith('<skill name="pdf-processing"')
    assert str(skill.folder) in result.content  # its own files (FORMS.md, scripts/) are found from there
    assert not result.is_error


def test_index_in_the_cached_head_and_body_on_demand_with_its_manifest_segment(project: Path,
                                                                            nova_home: Path) -> None:
    provider = ScriptedProvider([
        reply("loading", [_load("release-notes")]),
        reply("loaded; now the next request"),
        reply("second turn answer"),
    ])
    agent = _agent(nova_home, project, provider)
    runtime = agent.extensions.get(ContextRuntime)
    assert runtime is not None
    agent.run_turn("write the release notes")
    first, second = provider.requests[:2]
    # The index: every skill, one line each, in the system text of every request (the cached prefix).
    assert "- pdf-processing: Extract text and tables" in first.system
    assert "- release-notes: Write release notes into out/ from the git log." in first.system
    assert first.system == second.system
    # The body is in no request until it is loaded.
    assert "Never push." not in json.dumps([m.text for m in first.messages])
    assert "Never push." in last_message(second).tool_results()[0].content
    assert "skill" in [t.name for t in first.tools]

    manifest = runtime.last.manifest if runtime.last else None
    assert manifest is not None
    segments = manifest.by_id()
    assert segments["skills.index"].cls == "index" and segments["skills.index"].visibility == "system"
    loaded = segments["skill:release-notes"]
    assert loaded.cls == "on-demand" and loaded.source.startswith("skill:release-notes@2.0.0")
    assert sum(s.tokens for s in manifest.segments) == manifest.used

    # A later request: the loaded body is an on-demand history segment of its own.
    agent.run_turn("thanks; anything else?")
    assert runtime.last is not None
    history = [s for s in runtime.last.manifest.segments if s.source.startswith("skill:release-notes@2.0.0")]
    assert len(history) == 1 and history[0].cls == "on-demand" and history[0].id.startswith("history.")


def test_an_active_skill_limits_tools_files_and_network(project: Path, nova_home: Path) -> None:
    provider = ScriptedProvider([
        reply("loading", [_load("release-notes")]),
        reply("trying", [
            call("write_file", path="out/NOTES.md", content="# 1.0\n"),    # declared: allowed
            call("write_file", path="src/app.py", content="oops\n"),       # outside out/**: refused
            call("grep", pattern="hi"),                                    # not a declared tool: refused
            call("bash", command="curl -s https://example.org/x"),         # network: refused
            call("bash", command="echo hi > src/out.txt"),                 # writes outside out/**: refused
            call("bash", command="echo ok"),                               # declared and harmless: allowed
        ]),
        reply("done"),
        # The next request: the skill is no longer active, the ordinary policy (yes=True) applies.
        reply("editing", [call("write_file", path="src/app.py", content="print('bye')\n")]),
        reply("done again"),
    ])
    agent = _agent(nova_home, project, provider)
    agent.run_turn("write the release notes")
    results = last_message(provider.requests[2]).tool_results()
    outcomes = [(r.is_error, r.content) for r in results]
    assert not outcomes[0][0] and (project / "out" / "NOTES.md").read_text() == "# 1.0\n"
    for refused, needle in zip(outcomes[1:5], ["may write only out/**", "may use only bash, read_file, write_file",
                                               "declares no network", "may write only out/**"], strict=True):
        assert refused[0] and "Permission denied" in refused[1] and "release-notes@2.0.0" in refused[1], refused
        assert needle in refused[1]
    assert not outcomes[5][0] and "ok" in outcomes[5][1]
    assert (project / "src" / "app.py").read_text() == "print('hi')\n"
    assert not (project / "src" / "out.txt").exists()

    agent.run_turn("now change src/app.py")
    assert (project / "src" / "app.py").read_text() == "print('bye')\n"


def test_slash_skill_loads_the_body_into_the_request_and_activates_it(project: Path, nova_home: Path) -> None:
    from nova.cli.commands.run import run_task

    settings = load_settings(home=nova_home, overrides={"provider": "demo"})
    provider = ScriptedProvider([
        reply("trying", [call("write_file", path="src/app.py", content="x\n")]),
        reply("done"),
    ])
    outcome = run_task(settings, provider, AgentOptions(cwd=project, yes=True),
                       "/skill release-notes for version 1.0", quiet=True)
    assert outcome["text"] == "done"
    request = provider.requests[0].messages
    user = next(m for m in request if m.role == "user" and m.origin is None)
    assert user.parts[0].text.startswith('<skill name="release-notes" version="2.0.0"')  # type: ignore[union-attr]
    assert user.parts[1].text == "for version 1.0"  # type: ignore[union-attr]
    refused = last_message(provider.requests[1]).tool_results()[0]
    assert refused.is_error and "may write only out/**" in refused.content
    from nova.sessions.session import list_sessions

    kept = len(list_sessions(nova_home)[0])
    with pytest.raises(Exception, match="no skill named 'nope'"):
        run_task(settings, ScriptedProvider([]), AgentOptions(cwd=project, yes=True), "/skill nope", quiet=True)
    assert len(list_sessions(nova_home)[0]) == kept  # nothing was asked: no session is left behind


def test_unknown_skill_is_an_error_result(project: Path, nova_home: Path) -> None:
    provider = ScriptedProvider([reply("loading", [_load("nope")]), reply("ok")])
    _agent(nova_home, project, provider).run_turn("go")
    result = last_message(provider.requests[1]).tool_results()[0]
    assert result.is_error and "no skill named 'nope'" in result.content and "release-notes" in result.content


def test_cli_list_show_test_retire_and_roll_back(project: Path, nova_home: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project)
    runner = CliRunner()
    env = {"NOVA_HOME": str(nova_home)}

    listed = runner.invoke(app, ["skills", "list", "--json"], env=env)
    assert listed.exit_code == 0, listed.output
    data = json.loads(listed.output)
    assert [s["name"] for s in data["skills"]] == ["pdf-processing", "release-notes"]
    notes = data["skills"][1]
    assert notes["version"] == "2.0.0" and notes["permissions"]["network"] is False
    assert notes["review"]["by"] == "alice" and notes["tests"][0]["name"] == "has-template"
    table = runner.invoke(app, ["skills", "list"], env=env)
    assert "release-notes" in table.output and "2.0.0" in table.output

    shown = runner.invoke(app, ["skills", "show", "release-notes"], env=env)
    assert shown.exit_code == 0 and "no network" in shown.output and "Never push." in shown.output

    tested = runner.invoke(app, ["skills", "test", "--json"], env=env)
    assert tested.exit_code == 0, tested.output
    assert json.loads(tested.output)["passed"] is True
    (project / ".nova" / "skills" / "release-notes" / "template.md").unlink()
    # A changed skill folder is new to the user's trust: its tests run once trusted again.
    assert runner.invoke(app, ["skills", "test", "release-notes"], env=env).exit_code == 1
    assert runner.invoke(app, ["trust", "--yes"], env=env).exit_code == 0
    failing = runner.invoke(app, ["skills", "test", "release-notes"], env=env)
    assert failing.exit_code == 1 and "FAIL  release-notes: has-template" in failing.output

    # An older version kept beside the skill: rolling back retires 2.0.0 and brings 1.0.0 into use.
    _write(project / ".nova" / "skills" / "release-notes" / "versions" / "1.0.0" / "SKILL.md",
           NOVA_SKILL.replace("version: 2.0.0", "version: 1.0.0").replace("Never push.", "Old rules."))
    rolled = runner.invoke(app, ["skills", "rollback", "release-notes"], env=env)
    assert rolled.exit_code == 0 and "2.0.0 → 1.0.0" in rolled.output
    assert load_catalog(cwd=project, home=nova_home).require("release-notes").version == "1.0.0"
    only = runner.invoke(app, ["skills", "rollback", "release-notes"], env=env)
    assert only.exit_code == 1 and "only version" in only.output
    assert load_catalog(cwd=project, home=nova_home).require("release-notes").version == "1.0.0"
    restored = runner.invoke(app, ["skills", "restore", "release-notes", "--version", "2.0.0"], env=env)
    assert restored.exit_code == 0
    assert load_catalog(cwd=project, home=nova_home).require("release-notes").version == "2.0.0"


def test_a_broken_skill_is_reported_not_fatal(project: Path, nova_home: Path) -> None:
    _write(project / ".nova" / "skills" / "broken" / "SKILL.md", "no frontmatter here\n")
    _write(nova_home / "skills" / "release-notes" / "SKILL.md", NOVA_SKILL.replace("2.0.0", "9.9.9"))
    catalog = load_catalog(cwd=project, home=nova_home)
    assert sorted(catalog.skills) == ["pdf-processing", "release-notes"]
    assert catalog.require("release-notes").version == "2.0.0"  # the project's wins over the user's
    assert any("broken" in p and "starts with `---`" in p for p in catalog.problems)
    assert catalog.shadowed


def test_slash_skill_through_the_session_host_used_by_the_tui_and_server(project: Path, nova_home: Path) -> None:
    import threading

    from nova.errors import SkillError
    from nova.host.hub import SessionHub
    from nova.providers.scripted import FunctionProvider

    provider = FunctionProvider(lambda request: reply("ok"))
    settings = load_settings(env={"NOVA_HOME": str(nova_home)}, overrides={"provider": "demo"})
    hub = SessionHub(settings, options=AgentOptions(cwd=project, yes=True), make_provider=lambda: provider)
    try:
        session_id = hub.create("skills").id
        with pytest.raises(SkillError, match="no skill named 'nope'"):
            hub.start_turn(session_id, "/skill nope", lambda event: None)
        done = threading.Event()
        hub.start_turn(session_id, "/skill release-notes for 1.0", lambda event: done.set() if event is None else None)
        assert done.wait(10)
        sent = provider.requests[-1].messages
        user = next(m for m in sent if m.role == "user" and m.origin is None)
        assert user.text.startswith('<skill name="release-notes"') and user.text.endswith("for 1.0")
    finally:
        hub.close()


def test_a_skill_cannot_delegate_its_way_out_of_its_limits(project: Path, nova_home: Path) -> None:
    _write(project / ".nova" / "skills" / "offline" / "SKILL.md",
           "---\nname: offline\ndescription: Work without the network.\ntools: [task, bash]\n"
           "permissions: {network: false}\n---\nDelegate; never download.\n")
    provider = ScriptedProvider([
        reply("loading", [_load("offline")]),
        reply("delegating", [call("task", prompt="fetch the page")]),
        reply("child tries", [call("bash", command="wget https://example.org")]),   # the sub-agent
        reply("could not fetch"),                                                   # its report
        reply("then grep", [call("grep", pattern="x")]),  # still in use in the parent: grep is not declared
        reply("done"),
    ])
    _agent(nova_home, project, provider).run_turn("get the page")
    child_result = last_message(provider.requests[3]).tool_results()[0]
    assert child_result.is_error and "the active skill offline@" in child_result.content
    assert "declares no network" in child_result.content
    parent_grep = last_message(provider.requests[5]).tool_results()[0]
    assert parent_grep.is_error and "may use only bash, task" in parent_grep.content


def test_a_skill_body_is_not_taken_for_the_users_rules(project: Path, nova_home: Path) -> None:
    """`/skill` puts the body in the request; its "Never push." is the author's, not a rule to confirm."""
    provider = ScriptedProvider([reply("ok"), reply("ok")])
    agent = _agent(nova_home, project, provider)
    runtime = agent.extensions.get(ContextRuntime)
    assert runtime is not None
    from nova.skills.runtime import skill_request

    agent.run_turn(skill_request(runtime.sources.skills, "/skill release-notes write them"))
    assert runtime.state.load().pending == ()
    agent.run_turn("never force-push to main")
    assert [c.text for c in runtime.state.load().pending] == ["never force-push to main"]
