"""A full disk leaves no empty session behind: when a new session cannot be written, whether as it is
created or at its first record, nothing of it stays in `nova sessions list` or under sessions/.

The disk is simulated where Nova meets it: a real SQLite store whose writes raise OSError(ENOSPC)."""

from __future__ import annotations

import errno
import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nova.cli.main import app
from nova.errors import NovaError
from nova.messages import Message
from nova.sessions import backend
from nova.sessions import session as session_module
from nova.sessions.sqlite import SQLiteSessionStore
from nova.sessions.store import SessionRecord


def _no_space() -> OSError:
    return OSError(errno.ENOSPC, "No space left on device")


class FullDiskStore(SQLiteSessionStore):
    """The real store; `full_after` session saves succeed, then every write fails as a full disk does."""

    def __init__(self, path: Path, *, full_after: int) -> None:
        super().__init__(path)
        self.saves_left = full_after

    def save_session(self, record: SessionRecord) -> None:
        if self.saves_left <= 0:
            raise _no_space()
        self.saves_left -= 1
        super().save_session(record)

    def append_messages(self, session_id: str, messages: Sequence[Message]) -> None:
        if self.saves_left <= 0:
            raise _no_space()
        super().append_messages(session_id, messages)


def _left_behind(home: Path) -> list[str]:
    folder = home / "sessions"
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def test_a_session_that_cannot_be_created_leaves_nothing(nova_home: Path, tmp_path: Path) -> None:
    store = FullDiskStore(tmp_path / "nova.db", full_after=0)
    with pytest.raises((NovaError, OSError)):
        session_module.Session.create(nova_home, title="t", cwd=tmp_path, store=store)
    assert _left_behind(nova_home) == []
    assert store.list_sessions() == []


@pytest.mark.parametrize("full_after", [0, 1], ids=["full-at-creation", "full-at-the-first-record"])
def test_nova_run_on_a_full_disk_keeps_no_empty_session(nova_home: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch, full_after: int) -> None:
    stores: list[FullDiskStore] = []

    def full_store(home: Path) -> FullDiskStore:
        stores.append(FullDiskStore(home / "nova.db", full_after=full_after))
        return stores[-1]

    # Patched where every store is opened (modules that imported `default_store` keep the real one).
    monkeypatch.setattr(backend, "open_store", full_store)
    result = CliRunner().invoke(app, ["run", "look around", "--provider", "demo", "--cwd", str(tmp_path)])
    assert result.exit_code == 1, result.output
    assert "No space left on device" in result.output and "Traceback" not in result.output
    assert _left_behind(nova_home) == []
    monkeypatch.undo()
    listed = CliRunner().invoke(app, ["sessions", "list", "--json"])
    assert listed.exit_code == 0 and json.loads(listed.stdout) == []
