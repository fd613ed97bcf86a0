"""An imported session keeps what the record says about itself: a re-imported Nova export its title and
working directory; a format that records no working directory gets none, never the file's folder."""

from __future__ import annotations

import json
from pathlib import Path

from nova.messages import Message, TextPart
from nova.sessions.export import import_sessions, iter_jsonl
from nova.sessions.session import Session


def _session(home: Path, cwd: Path) -> Session:
    session = Session.create(home, title="fix the flaky parser test", cwd=cwd, provider="anthropic",
                             model="claude-sonnet-4-5")
    session.record_message(Message(role="user", parts=(TextPart("fix the flaky parser test"),), id="m1"))
    session.record_message(Message(role="assistant", parts=(TextPart("done"),), id="m2"))
    session.close()
    return session


def test_a_reimported_export_keeps_its_title_and_working_directory(nova_home: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    original = _session(nova_home, project)
    exported = tmp_path / "exports" / "20261130-export.jsonl"
    exported.parent.mkdir()
    with Session.open(nova_home, original.id, readonly=True) as session:
        exported.write_bytes(b"".join(iter_jsonl(session)))
    result = import_sessions(exported, nova_home)
    with Session.open(nova_home, result.session_id, readonly=True) as again:
        assert again.meta.title == "fix the flaky parser test"
        assert again.meta.cwd == str(project)
        assert result.messages == 2


def test_importing_a_session_folder_keeps_its_title(nova_home: Path, tmp_path: Path) -> None:
    original = _session(nova_home, tmp_path)
    result = import_sessions(original.dir, nova_home)
    with Session.open(nova_home, result.session_id, readonly=True) as again:
        assert again.meta.title == "fix the flaky parser test" and again.meta.cwd == str(tmp_path)


def test_a_format_without_a_working_directory_gets_none(nova_home: Path, tmp_path: Path) -> None:
    chat = tmp_path / "trajectories" / "run-7.json"
    chat.parent.mkdir()
    chat.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"},
                                             {"role": "assistant", "content": "hello"}]}))
    result = import_sessions(chat, nova_home)
    with Session.open(nova_home, result.session_id, readonly=True) as imported:
        assert imported.meta.cwd == "" and imported.meta.git_root == ""
        assert imported.meta.title == "run-7"  # no title in the format: the file's name


def test_a_title_given_on_the_command_line_wins(nova_home: Path, tmp_path: Path) -> None:
    original = _session(nova_home, tmp_path)
    result = import_sessions(original.dir, nova_home, title="mine")
    with Session.open(nova_home, result.session_id, readonly=True) as again:
        assert again.meta.title == "mine"
