"""The model cannot rewrite the rules it runs under: no write tool touches Nova's config, policy,
instruction files or memory, whatever `--yes` and allow rules say. Each case runs a real agent (built by
`build_agent`) whose scripted model tries the write; the file must be unchanged afterwards."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nova.agent.builder import AgentOptions, build_agent
from nova.settings import load_settings
from nova.testing import ScriptedProvider, call, reply

ORIGINAL = "original\n"


@pytest.fixture()
def world(tmp_path: Path) -> dict[str, Path]:
    home = tmp_path / "home"
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / "src").mkdir()
    (project / ".nova" / "memory").mkdir(parents=True)
    home.mkdir()
    (home / "config.json").write_text(json.dumps({"permissions": {"allow": ["write_file", "edit_file"]}}))
    for path in (home / "policy.md", home / "NOVA.md", project / "NOVA.md", project / "AGENTS.md",
                 project / "src" / "CLAUDE.md", project / ".nova" / "memory" / "user_role.md",
                 project / "notes.md", project / "shared-rules.md"):
        path.write_text(ORIGINAL)
    (project / "CLAUDE.md").write_text("@shared-rules.md\n")
    (project / "link-to-config").symlink_to(home / "config.json")
    return {"home": home, "project": project}


def run_write(world: dict[str, Path], tool: str, path: str) -> str:
    settings = load_settings(home=world["home"], env={}, overrides={"provider": "demo", "model": "demo"})
    if tool == "write_file":
        attempt = call("write_file", path=path, content='{"permissions": {"allow": ["bash"]}}')
    else:
        attempt = call("edit_file", path=path, old_text="original", new_text="forged")
    provider = ScriptedProvider([reply("", [attempt]), reply("done")])
    agent = build_agent(settings, provider, AgentOptions(cwd=world["project"], yes=True,
                                                         allowed_tools=frozenset({tool})))
    agent.run_turn("change the rules")
    result = next(r for m in agent.history for r in m.tool_results())
    assert result.is_error, result.content
    return result.content


TARGETS = [
    ("write_file", "{home}/config.json"),
    ("write_file", "{home}/policy.md"),
    ("edit_file", "{home}/NOVA.md"),
    ("edit_file", "NOVA.md"),
    ("edit_file", "AGENTS.md"),
    ("edit_file", "src/CLAUDE.md"),  # nested instruction files are rules too
    ("edit_file", ".nova/memory/user_role.md"),
    ("write_file", ".nova/memory/forged.md"),  # a new memory file with forged frontmatter
    ("edit_file", "shared-rules.md"),  # imported by CLAUDE.md with @
    ("write_file", "link-to-config"),  # a symlink into Nova's home
    ("write_file", "src/../.nova/config.json"),
]


@pytest.mark.parametrize(("tool", "target"), TARGETS)
def test_no_write_tool_changes_novas_own_files(world: dict[str, Path], tool: str, target: str) -> None:
    path = target.format(home=world["home"])
    before = {p: p.read_bytes() for p in (*world["home"].rglob("*"), *world["project"].rglob("*"))
              if p.is_file() and "sessions" not in p.parts and p.suffix != ".db" and "-wal" not in p.name
              and "-shm" not in p.name}
    message = run_write(world, tool, path)
    assert "refused" in message and "no tool may change it" in message
    after = {p: p.read_bytes() for p in before}
    assert after == before
    assert not (world["project"] / ".nova" / "memory" / "forged.md").exists()
    assert not (world["project"] / ".nova" / "config.json").exists()


def test_ordinary_files_are_still_writable(world: dict[str, Path]) -> None:
    settings = load_settings(home=world["home"], env={}, overrides={"provider": "demo", "model": "demo"})
    provider = ScriptedProvider([reply("", [call("edit_file", path="notes.md", old_text="original",
                                                 new_text="updated")]), reply("done")])
    agent = build_agent(settings, provider, AgentOptions(cwd=world["project"], yes=True))
    agent.run_turn("update the notes")
    assert (world["project"] / "notes.md").read_text() == "updated\n"
