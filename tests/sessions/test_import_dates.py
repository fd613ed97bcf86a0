"""An imported session is dated by its recording: `nova sessions list` orders and ages sessions by when
they happened, so a folder imported at once must not show every session at the import's minute."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from nova.cli.commands.sessions import _list_when
from nova.cli.main import app


def _record(kind: str, n: int, stamp: str | None, message: dict[str, Any]) -> dict[str, Any]:
    record: dict[str, Any] = {"type": kind, "uuid": f"u{n}", "parentUuid": f"u{n - 1}" if n > 1 else None,
                              "sessionId": "s1", "cwd": "/repo", "version": "2.0.76", "message": message}
    if stamp is not None:
        record["timestamp"] = stamp
    return record


def _session(path: Path, stamps: list[str | None]) -> Path:
    """A Claude Code conversation of alternating prompts and replies, record n written at stamps[n]."""
    records = []
    for n, stamp in enumerate(stamps, start=1):
        if n % 2:
            records.append(_record("user", n, stamp, {"role": "user", "content": f"question {n}"}))
        else:
            records.append(_record("assistant", n, stamp, {
                "id": f"msg{n}", "role": "assistant", "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": f"answer {n}"}],
                "usage": {"input_tokens": 900, "output_tokens": 30}}))
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _epoch(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def _import(path: Path) -> dict[str, Any]:
    runner = CliRunner()
    imported = runner.invoke(app, ["sessions", "import", str(path), "--json"])
    assert imported.exit_code == 0, imported.output
    shown = runner.invoke(app, ["sessions", "show", json.loads(imported.stdout)["session_id"], "--json"])
    assert shown.exit_code == 0, shown.output
    return dict(json.loads(shown.stdout))


def test_an_imported_session_carries_its_recorded_start_and_end(tmp_path: Path, nova_home: Path) -> None:
    # Written out of order (a resumed file appends older records): the earliest and latest win.
    stamps = ["2025-03-04T10:00:00Z", "2025-03-04T10:01:00Z", "2025-03-04T09:58:00Z", "2025-03-04T11:30:00Z"]
    shown = _import(_session(tmp_path / "s1.jsonl", stamps))
    assert shown["created_at"] == _epoch("2025-03-04T09:58:00Z")
    assert shown["updated_at"] == _epoch("2025-03-04T11:30:00Z")


def test_a_recording_without_times_keeps_the_import_time(tmp_path: Path, nova_home: Path) -> None:
    before = time.time()
    shown = _import(_session(tmp_path / "s1.jsonl", [None, None]))
    assert shown["created_at"] >= before
    assert shown["updated_at"] >= shown["created_at"]


def test_the_list_orders_imports_by_when_they_ran(tmp_path: Path, nova_home: Path) -> None:
    older = _session(tmp_path / "older.jsonl", ["2024-05-01T08:00:00Z", "2024-05-01T08:05:00Z"])
    newer = _session(tmp_path / "newer.jsonl", ["2025-06-01T08:00:00Z", "2025-06-01T08:05:00Z"])
    runner = CliRunner()
    for path in (older, newer):  # the older one imported last
        assert runner.invoke(app, ["sessions", "import", str(path)]).exit_code == 0
    listed = runner.invoke(app, ["sessions", "list", "--json"])
    assert [s["title"] for s in json.loads(listed.stdout)] == ["newer", "older"]
    table = runner.invoke(app, ["sessions", "list"], env={"COLUMNS": "100"})
    assert "2024-05-01" in table.stdout and "2025-06-01" in table.stdout


def test_the_updated_cell_names_the_year_only_when_it_is_another() -> None:
    now = datetime(2026, 12, 3, 12, 0, tzinfo=UTC).timestamp()
    this_year = datetime(2026, 7, 9, 12, 0, tzinfo=UTC).timestamp()
    last_year = datetime(2025, 7, 9, 12, 0, tzinfo=UTC).timestamp()
    assert _list_when(this_year, now) == time.strftime("%m-%d %H:%M", time.localtime(this_year))
    assert _list_when(last_year, now) == time.strftime("%Y-%m-%d", time.localtime(last_year))
    assert _list_when(0.0, now) == "-"
