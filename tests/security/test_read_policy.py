"""One read policy for every reading tool: a deny rule for reading keeps a file's contents out of
`read_file`, `grep` and `glob` alike; secret-looking files and paths outside the workspace need the user's
approval; a directory search never shows such a file, and says what it left out.

Every case runs the real tools under a real `PermissionPolicy` on real files, and checks that the secret
text never comes back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nova.agent.builder import AgentOptions, build_agent
from nova.context.budget import ContextBudget
from nova.context.compaction import RestoreContext, compact
from nova.context.summarize import ExtractiveSummarizer
from nova.fs.secret_paths import secret_path_kind
from nova.messages import Message, ToolResultPart, ToolUsePart
from nova.providers.base import assistant_message
from nova.settings import CompactionConfig, PermissionsConfig, load_settings
from nova.testing import ScriptedProvider, call, reply
from nova.tokens import HeuristicCounter
from nova.tools import ToolContext, ToolOutput, default_registry
from nova.tools.permissions import PermissionPolicy, PermissionRequest, run_tool_checked

SECRET = "sk-live-7f3a9c-SECRET"


@pytest.fixture()
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A project (a git root) holding a .env and ordinary code, a user home with a key in ~/.ssh, and a
    file outside both."""
    user = tmp_path / "user"
    (user / ".ssh").mkdir(parents=True)
    (user / ".ssh" / "id_ed25519").write_text(f"-----BEGIN OPENSSH PRIVATE KEY-----\n{SECRET}\n")
    monkeypatch.setenv("HOME", str(user))
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / "src").mkdir()
    (project / "src" / "settings.py").write_text("API_KEY = os.environ['API_KEY']\n")
    (project / ".env").write_text(f"API_KEY={SECRET}\n")
    (project / ".env.example").write_text("API_KEY=changeme\n")
    (tmp_path / "outside.txt").write_text(f"API_KEY={SECRET}\n")
    return {"project": project, "user": user, "tmp": tmp_path}


def checked(world: dict[str, Path], tool: str, args: dict[str, Any], *, deny: tuple[str, ...] = (),
            allow: tuple[str, ...] = (), ask_rules: tuple[str, ...] = (), yes: bool = False,
            answer: bool | None = None) -> tuple[ToolOutput, list[PermissionRequest]]:
    """Run `tool` through a real policy built from these rules; `answer` is the user's reply when asked
    (None: a headless run, no one to ask)."""
    asked: list[PermissionRequest] = []

    def ask(request: PermissionRequest) -> bool:
        asked.append(request)
        return bool(answer)

    policy = PermissionPolicy(PermissionsConfig(allow=allow, deny=deny, ask=ask_rules),
                              interactive=answer is not None, ask=ask if answer is not None else None,
                              yes=yes, cwd=world["project"])
    tool_object = default_registry().get(tool)
    assert tool_object is not None
    return run_tool_checked(policy, tool_object, args, ToolContext(cwd=world["project"])), asked


# -- deny rules apply to every reading tool ------------------------------------------------------------
def _link_to_env(world: dict[str, Path]) -> None:
    (world["project"] / "docs").mkdir()
    (world["project"] / "docs" / "config.txt").symlink_to(world["project"] / ".env")


def _secrets_folder(world: dict[str, Path]) -> None:
    (world["project"] / "secrets").mkdir()
    (world["project"] / "secrets" / "prod.txt").write_text(f"API_KEY={SECRET}\n")


def _nothing(world: dict[str, Path]) -> None:
    return None


DENIED = [
    # (id, deny rule, setup, tool, arguments)
    ("grep-folder", "read_file(.env)", _nothing, "grep", {"pattern": "API_KEY"}),
    ("grep-folder-case-insensitive", "read_file(.env)", _nothing, "grep", {"pattern": "sk-LIVE", "ignore_case": True}),
    ("grep-folder-glob-env", "read_file(.env)", _nothing, "grep", {"pattern": "API", "glob": ".env*"}),
    ("grep-folder-absolute", "read_file(.env)", _nothing, "grep", {"pattern": "API", "path": "{project}"}),
    ("grep-named-file", "read_file(.env)", _nothing, "grep", {"pattern": "API", "path": ".env"}),
    ("grep-link-to-denied", "read_file(.env)", _link_to_env, "grep", {"pattern": "API", "path": "docs"}),
    ("grep-denied-folder", "read_file(secrets/*)", _secrets_folder, "grep", {"pattern": "API_KEY"}),
    ("glob-lists-denied", "read_file(.env)", _nothing, "glob", {"pattern": ".env*"}),
    ("glob-all-lists-denied", "read_file(.env)", _nothing, "glob", {"pattern": "**/*", "path": "{project}"}),
    ("read-file-by-grep-rule", "grep(.env)", _nothing, "read_file", {"path": ".env"}),
    ("read-file-by-glob-rule", "glob(secrets/*)", _secrets_folder, "read_file", {"path": "secrets/prod.txt"}),
    ("edit-file-shows-denied", "read_file(.env)", _nothing, "edit_file",
     {"path": ".env", "old_text": "API_KEY=", "new_text": "API_TOKEN="}),
]


@pytest.mark.parametrize(("rule", "setup", "tool", "args"), [d[1:] for d in DENIED], ids=[d[0] for d in DENIED])
def test_a_read_deny_rule_holds_for_every_reading_tool(world: dict[str, Path], rule: str, setup: Any, tool: str,
                                                      args: dict[str, Any]) -> None:
    setup(world)
    args = {k: v.format(project=world["project"]) if isinstance(v, str) else v for k, v in args.items()}
    # --yes approves anything that asks; a deny rule still wins.
    out, _ = checked(world, tool, args, deny=(rule,), yes=True, allow=("edit_file",))
    assert SECRET not in out.content
    assert ".env\n" not in out.content + "\n" and "secrets/prod.txt" not in out.content.replace(
        "secrets/prod.txt' is refused", "")
    if tool in ("grep", "glob") and not out.content.startswith("Permission denied"):
        assert "skipped: a deny rule forbids reading them" in out.content
    assert json.dumps(dict(out.metadata), default=str).count(SECRET) == 0


def test_other_files_are_still_searched_beside_a_denied_one(world: dict[str, Path]) -> None:
    out, _ = checked(world, "grep", {"pattern": "API_KEY"}, deny=("read_file(.env)",))
    assert out.content.splitlines()[:2] == [".env.example:1: API_KEY=changeme",
                                            "src/settings.py:1: API_KEY = os.environ['API_KEY']"]
    assert out.metadata["skipped_denied"] == 1


# -- secret-looking files need approval ------------------------------------------------------------------
def _put(relative: str) -> Any:
    def setup(world: dict[str, Path]) -> None:
        target = world["project"] / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f"token={SECRET}\n")
    return setup


def _link_named_innocently(world: dict[str, Path]) -> None:
    (world["project"] / "notes.txt").symlink_to(world["project"] / ".env")


SECRET_READS = [
    ("dotenv", _nothing, "read_file", {"path": ".env"}),
    ("dotenv-production", _put(".env.production"), "read_file", {"path": ".env.production"}),
    ("pem", _put("deploy/server.pem"), "read_file", {"path": "deploy/server.pem"}),
    ("key", _put("certs/tls.key"), "read_file", {"path": "certs/tls.key"}),
    ("id-rsa-in-project", _put("keys/id_rsa"), "read_file", {"path": "keys/id_rsa"}),
    ("netrc", _put(".netrc"), "read_file", {"path": ".netrc"}),
    ("git-credentials", _put(".git-credentials"), "read_file", {"path": ".git-credentials"}),
    ("aws-credentials", _put(".aws/credentials"), "read_file", {"path": ".aws/credentials"}),
    ("credentials-json", _put("config/credentials.json"), "read_file", {"path": "config/credentials.json"}),
    ("ssh-key-in-home", _nothing, "read_file", {"path": "~/.ssh/id_ed25519"}),
    ("ssh-folder-grep", _nothing, "grep", {"pattern": "sk-live", "path": "~/.ssh"}),
    ("ssh-folder-glob", _nothing, "glob", {"pattern": "*", "path": "~/.ssh"}),
    ("grep-named-dotenv", _nothing, "grep", {"pattern": "API", "path": ".env"}),
    ("link-named-innocently", _link_named_innocently, "read_file", {"path": "notes.txt"}),
]


@pytest.mark.parametrize(("setup", "tool", "args"), [s[1:] for s in SECRET_READS], ids=[s[0] for s in SECRET_READS])
def test_secret_looking_files_need_approval(world: dict[str, Path], setup: Any, tool: str,
                                            args: dict[str, Any]) -> None:
    setup(world)
    headless, _ = checked(world, tool, args)
    assert headless.is_error and "needs approval" in headless.content
    assert SECRET not in headless.content
    declined, asked = checked(world, tool, args, answer=False)
    assert declined.is_error and SECRET not in declined.content
    assert len(asked) == 1 and ("secret" in asked[0].reason or "outside the workspace" in asked[0].reason)


def test_an_approved_secret_read_goes_through(world: dict[str, Path]) -> None:
    out, asked = checked(world, "read_file", {"path": ".env"}, answer=True)
    assert SECRET in out.content and len(asked) == 1 and "secret" in asked[0].reason


def test_an_allow_rule_naming_the_file_permits_it_without_asking(world: dict[str, Path]) -> None:
    out, asked = checked(world, "read_file", {"path": ".env"}, allow=("read_file(.env)",), answer=False)
    assert SECRET in out.content and not asked
    found, _ = checked(world, "grep", {"pattern": "sk-live"}, allow=("read_file(.env)",))
    assert f".env:1: API_KEY={SECRET}" in found.content


def test_env_templates_and_ordinary_files_do_not_ask(world: dict[str, Path]) -> None:
    for path in (".env.example", "src/settings.py"):
        out, asked = checked(world, "read_file", {"path": path})
        assert not out.is_error and not asked
    assert secret_path_kind(".env.example") is None and secret_path_kind("src/env.py") is None


SEARCHES = [
    ("grep-dotenv", _nothing, {"pattern": "sk-live"}, ".env"),
    ("grep-dotenv-production", _put(".env.production"), {"pattern": "sk-live"}, ".env.production"),
    ("grep-pem", _put("deploy/server.pem"), {"pattern": "sk-live"}, "deploy/server.pem"),
    ("grep-key-in-ssh-folder", _put("home/.ssh/config"), {"pattern": "sk-live"}, "home/.ssh/config"),
    ("grep-credentials", _put(".aws/credentials"), {"pattern": "token"}, ".aws/credentials"),
    ("grep-link-to-env", _link_named_innocently, {"pattern": "sk-live"}, "notes.txt"),
    ("grep-glob-env", _nothing, {"pattern": "API", "glob": ".env*"}, ".env"),
]


@pytest.mark.parametrize(("setup", "args", "named"), [s[1:] for s in SEARCHES], ids=[s[0] for s in SEARCHES])
def test_a_directory_search_skips_secret_looking_files_and_says_so(world: dict[str, Path], setup: Any,
                                                                   args: dict[str, Any], named: str) -> None:
    setup(world)
    out, asked = checked(world, "grep", args, yes=True)  # even with --yes: a search cannot ask per file
    assert SECRET not in out.content and not asked
    assert "needs the user's approval" in out.content and named in out.content


# -- reads outside the workspace need approval ------------------------------------------------------------
def _link_out(world: dict[str, Path]) -> None:
    (world["project"] / "notes.txt").symlink_to(world["tmp"] / "outside.txt")


OUTSIDE = [
    ("absolute", _nothing, "read_file", {"path": "{tmp}/outside.txt"}),
    ("dotdot", _nothing, "read_file", {"path": "../outside.txt"}),
    ("etc-passwd", _nothing, "read_file", {"path": "/etc/passwd"}),
    ("link-out", _link_out, "read_file", {"path": "notes.txt"}),
    ("grep-parent", _nothing, "grep", {"pattern": "sk-live", "path": ".."}),
    ("grep-outside-file", _nothing, "grep", {"pattern": "sk-live", "path": "{tmp}/outside.txt"}),
    ("glob-parent", _nothing, "glob", {"pattern": "*.txt", "path": ".."}),
]


@pytest.mark.parametrize(("setup", "tool", "args"), [o[1:] for o in OUTSIDE], ids=[o[0] for o in OUTSIDE])
def test_reads_outside_the_workspace_need_approval(world: dict[str, Path], setup: Any, tool: str,
                                                   args: dict[str, Any]) -> None:
    setup(world)
    args = {k: v.format(tmp=world["tmp"]) if isinstance(v, str) else v for k, v in args.items()}
    headless, _ = checked(world, tool, args)
    assert headless.is_error and "outside the workspace" in headless.content
    assert SECRET not in headless.content and "outside.txt\n" not in headless.content


def test_a_search_inside_the_workspace_skips_links_leading_out(world: dict[str, Path]) -> None:
    _link_out(world)
    out, _ = checked(world, "grep", {"pattern": "sk-live"})
    assert SECRET not in out.content
    assert "notes.txt" in out.content and "needs the user's approval" in out.content


def test_the_session_folder_is_readable_for_spilled_results(world: dict[str, Path]) -> None:
    spilled = world["tmp"] / "nova-home" / "sessions" / "s1" / "tool-results" / "toolu_1.txt"
    spilled.parent.mkdir(parents=True)
    spilled.write_text("the whole output\n")
    policy = PermissionPolicy(PermissionsConfig(), interactive=False, cwd=world["project"],
                              read_roots=(spilled.parent.parent,))
    tool = default_registry().get("read_file")
    assert tool is not None
    out = run_tool_checked(policy, tool, {"path": str(spilled)}, ToolContext(cwd=world["project"]))
    assert "the whole output" in out.content


# -- end to end: the agent loop --------------------------------------------------------------------------
@pytest.mark.parametrize("deny", [[], ["read_file(.env)"]], ids=["no-rules", "deny-rule"])
def test_a_scripted_model_cannot_grep_a_secret_out(world: dict[str, Path], nova_home: Path, deny: list[str]) -> None:
    nova_home.mkdir(parents=True, exist_ok=True)
    (nova_home / "config.json").write_text(json.dumps({"permissions": {"deny": deny}}))
    settings = load_settings(home=nova_home, env={}, overrides={"provider": "demo", "model": "demo"})
    attempts = [call("grep", pattern="sk-live"), call("grep", pattern="API_KEY=", path="."),
                call("glob", pattern="**/*.env*"), call("read_file", path=".env"),
                call("read_file", path="~/.ssh/id_ed25519"), call("grep", pattern="sk-live", path="~/.ssh")]
    provider = ScriptedProvider([reply("", attempts), reply("done")])
    agent = build_agent(settings, provider, AgentOptions(cwd=world["project"]))
    agent.run_turn("find the API key")
    results = [r for m in agent.history for r in m.tool_results()]
    assert len(results) == len(attempts)
    for result in results:
        assert SECRET not in result.content
    # Nothing the provider was sent holds it either.
    assert all(SECRET not in json.dumps(str(r)) for r in provider.requests)


# -- compaction's restore attachment -------------------------------------------------------------------
def test_compaction_never_rereads_a_file_whose_read_was_refused(world: dict[str, Path]) -> None:
    """After a compaction, recently read files are re-read from disk into the summary; a read the policy
    refused must not become one, or the summary would carry what the policy kept out."""
    refused = ToolUsePart(id="toolu_env", name="read_file", input={"path": ".env"})
    messages = [Message.user("Find the API key."), assistant_message("Reading .env.", [refused]),
                Message(role="user", parts=(ToolResultPart(refused.id, "Permission denied: needs approval",
                                                           is_error=True),))]
    for i in range(30):
        use = ToolUsePart(id=f"toolu_{i:04d}", name="bash", input={"command": f"cat part_{i}.txt"})
        words = " ".join(f"word{(i * 31 + j) % 997}" for j in range(500))
        messages += [assistant_message(f"Step {i}.", [use]), Message(role="user", parts=(ToolResultPart(use.id, words),))]
    outcome = compact(messages, summarizer=ExtractiveSummarizer(), counter=HeuristicCounter(),
                      budget=ContextBudget.derive(CompactionConfig(), 32_000),
                      restore=RestoreContext(read_file=lambda p: (world["project"] / p).read_text()))
    assert outcome.ok
    assert SECRET not in "".join(m.text for m in outcome.messages)
