"""Private by default: what Nova writes (sessions, the store, spilled output, memories) is readable by
the user alone — folders 0700, files 0600 — even under a permissive umask."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from nova.context.spill import Spiller
from nova.memory.store import Memory, MemoryStore
from nova.messages import Message, ToolResultPart
from nova.sessions.session import Session
from nova.settings import SpillConfig


@pytest.fixture()
def open_umask() -> Iterator[None]:
    previous = os.umask(0o002)  # group-writable, world-readable: the laxest common setting
    try:
        yield
    finally:
        os.umask(previous)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_session_files_and_folders_are_private(tmp_path: Path, open_umask: None) -> None:
    home = tmp_path / "home"
    session = Session.create(home, cwd=tmp_path)
    session.record_message(Message.user("my token is hunter2"))
    session.flush()
    spiller = Spiller(config=SpillConfig(max_result_chars=100), session_dir=session.dir)
    spiller.process_result(None, ToolResultPart("toolu_1", "secret output " * 100))
    session.close()

    folders = [home, home / "sessions", session.dir, *(p for p in session.dir.rglob("*") if p.is_dir())]
    files = [home / "nova.db", *(p for p in session.dir.rglob("*") if p.is_file())]
    assert any(p.suffix == ".txt" for p in files)  # the spilled output is among them
    assert {str(p): oct(mode(p)) for p in folders} == {str(p): oct(0o700) for p in folders}
    assert {str(p): oct(mode(p)) for p in files} == {str(p): oct(0o600) for p in files}


def test_memory_files_are_private(tmp_path: Path, open_umask: None) -> None:
    (tmp_path / "project" / ".git").mkdir(parents=True)
    store = MemoryStore.for_workspace(home=tmp_path / "home", cwd=tmp_path / "project")
    written = store.write(Memory(name="deploy key", description="where it lives", type="project", body="vault"))
    assert written.path is not None
    assert oct(mode(written.path)) == oct(0o600)
    assert oct(mode(written.path.parent)) == oct(0o700)
