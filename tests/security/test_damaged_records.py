"""Damage to a session's files blocks nothing and loses nothing silently: a bad transcript line is
skipped with a warning naming the file and its byte offset (and left in place), meta.json and the store
are rebuilt from the transcript, an empty transcript says so, a whole last record without its newline is
kept; `--strict` refuses instead, naming the offset."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from nova.cli.commands.sessions import app, resume_command
from nova.messages import Message, TextPart
from nova.sessions.session import Session, list_sessions

runner = CliRunner()
TEXTS = ["first question", "first answer", "second question", "second answer"]


def _make(home: Path) -> Session:
    session = Session.create(home, title="damaged", cwd=str(home), provider="demo", model="nova-demo")
    for i, text in enumerate(TEXTS):
        session.record_message(Message(role="user" if i % 2 == 0 else "assistant", parts=(TextPart(text),),
                                        id=f"m{i + 1}", created_at=float(i)))
    session.close()
    return session


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def _insert(path: Path, at: int, line: bytes) -> int:
    """Put `line` before the `at`-th line (or at the end); returns its byte offset."""
    lines = _lines(path)
    offset = sum(len(x) for x in lines[:at])
    path.write_bytes(b"".join([*lines[:at], line, *lines[at:]]))
    return offset


@dataclass(frozen=True)
class Damage:
    name: str
    apply: Callable[[Path, Path], int | None]
    """(session dir, home) -> the byte offset the warning must name, or None."""
    warning: str
    """What every reader must say (besides the offset)."""
    strict_refuses: bool = True
    texts: tuple[str, ...] = tuple(TEXTS)
    """Messages that must still be read."""


def _bad_line(at: int, line: bytes) -> Callable[[Path, Path], int | None]:
    return lambda d, _home: _insert(d / "transcript.jsonl", at, line)


def _break_meta(d: Path, _home: Path) -> None:
    (d / "meta.json").write_text('{"v":2,"id":')


def _drop_meta(d: Path, _home: Path) -> None:
    (d / "meta.json").unlink()


def _garbage_store(_d: Path, home: Path) -> None:
    (home / "nova.db").write_bytes(os.urandom(4096))
    for side in ("nova.db-wal", "nova.db-shm"):
        (home / side).unlink(missing_ok=True)


def _empty_transcript(d: Path, _home: Path) -> None:
    (d / "transcript.jsonl").write_bytes(b"")


def _no_final_newline(d: Path, _home: Path) -> None:
    path = d / "transcript.jsonl"
    path.write_bytes(path.read_bytes().rstrip(b"\n"))


def _truncated_last(d: Path, _home: Path) -> int:
    path = d / "transcript.jsonl"
    data = path.read_bytes()
    path.write_bytes(data + b'{"v":1,"type":"message","ts":9,"message":{"role":"user","par')
    return len(data)


SCHEMA_INVALID = b'{"v":1,"type":"message","ts":1,"message":{"role":"wizard","parts":[]}}\n'
DAMAGE = [
    Damage("garbage-at-start", _bad_line(0, b"\x00\xffnot json at all\n"), "not valid JSON"),
    Damage("garbage-in-middle", _bad_line(2, b'{"v":1,"type":"message","ts":1,"mess\n'), "not valid JSON"),
    Damage("garbage-at-end", _bad_line(99, b"}}}}\n"), "not valid JSON"),
    Damage("newer-version", _bad_line(2, b'{"v":99,"type":"message","ts":1,"message":{}}\n'), "schema version 99"),
    Damage("schema-invalid", _bad_line(2, SCHEMA_INVALID), "malformed message record"),
    Damage("broken-meta", _break_meta, "meta.json is corrupt"),
    Damage("missing-meta", _drop_meta, "meta.json is missing"),
    Damage("garbage-store", _garbage_store, "nova.db was unreadable", strict_refuses=False),
    Damage("empty-transcript", _empty_transcript, "is empty (0 bytes)", texts=()),
    Damage("last-line-without-newline", _no_final_newline, "", strict_refuses=False),
    Damage("truncated-last-line", _truncated_last, "incomplete last record"),
]


@pytest.mark.parametrize("damage", DAMAGE, ids=[d.name for d in DAMAGE])
def test_damage_is_read_around_with_a_warning_and_refused_strictly(nova_home: Path, damage: Damage) -> None:
    session = _make(nova_home)
    transcript = session.dir / "transcript.jsonl"
    offset = damage.apply(session.dir, nova_home)
    damaged_bytes = transcript.read_bytes()

    # --strict refuses, naming the offset, and changes nothing.
    strict = runner.invoke(app, ["show", session.id, "--strict"])
    if damage.strict_refuses:
        assert strict.exit_code == 1, strict.output
        assert "Traceback" not in strict.stderr
        if offset is not None:
            assert f"at byte {offset}" in strict.stderr
        with pytest.raises(typer.Exit):
            resume_command(session.id, home=nova_home, strict=True)
        assert runner.invoke(app, ["export", session.id, "--strict"]).exit_code == 1
        assert transcript.read_bytes() == damaged_bytes
    else:
        assert strict.exit_code == 0, strict.stderr

    # Without --strict: shown, every message before and after the damage, and a warning naming it.
    shown = runner.invoke(app, ["show", session.id])
    assert shown.exit_code == 0, shown.stderr
    for text in damage.texts:
        assert text in shown.stdout
    if damage.warning and damage.name != "garbage-store":  # the store warning goes to its one opener
        assert damage.warning in shown.stderr
    if offset is not None:
        assert f"transcript.jsonl at byte {offset}" in shown.stderr or f"offset {offset}" in shown.stderr

    # Resumed, with the same messages and the warning.
    resumed = resume_command(session.id, home=nova_home)
    try:
        assert [m.text for m in resumed.history] == list(damage.texts)
        notices = " | ".join(resumed.notices)
        if damage.warning and damage.name != "garbage-store":
            assert damage.warning in notices
        if offset is not None:
            assert str(offset) in notices
        resumed.session.record_message(Message.user("after the damage"))
    finally:
        resumed.session.close()

    # Nothing was thrown away: a damaged line stays in the log, a torn one is kept beside it, a broken
    # meta.json is kept beside the new one, a garbage store is kept beside the new one.
    after = transcript.read_bytes()
    if damage.name == "truncated-last-line":
        assert offset is not None
        (kept,) = session.dir.glob("transcript.jsonl.corrupt-*")
        assert kept.read_bytes() == damaged_bytes[offset:]
    elif damage.name == "last-line-without-newline":
        assert after.startswith(damaged_bytes + b"\n")
    else:
        assert after.startswith(damaged_bytes)
    if damage.name == "broken-meta":
        (kept,) = session.dir.glob("meta.json.corrupt-*")
        assert kept.read_text() == '{"v":2,"id":'
    again = Session.open(nova_home, session.id, readonly=True)
    try:
        assert [m.text for m in again.load_history()] == [*damage.texts, "after the damage"]
        assert again.meta.message_count >= len(damage.texts) + 1 or damage.name == "empty-transcript"
    finally:
        again.close()


def test_a_garbage_store_is_moved_aside_once_and_blocks_no_session(nova_home: Path) -> None:
    first, second = _make(nova_home), _make(nova_home)
    _garbage_store(first.dir, nova_home)
    garbage = (nova_home / "nova.db").read_bytes()
    resumed = resume_command(first.id, home=nova_home)
    resumed.session.close()
    (kept,) = nova_home.glob("nova.db.corrupt-*")
    assert kept.read_bytes() == garbage
    assert any(str(kept) in n for n in resumed.notices)
    other = resume_command(second.id, home=nova_home)  # the new store serves every session, no new warning
    other.session.close()
    assert [m.text for m in other.history] == TEXTS
    assert not any("nova.db" in n for n in other.notices)
    assert len(list(nova_home.glob("nova.db.corrupt-*"))) == 1
    # The store knows both sessions again, with their messages.
    from nova.sessions.sqlite import SQLiteSessionStore

    store = SQLiteSessionStore(nova_home / "nova.db")
    try:
        assert [s.message.text for s in store.get_messages(second.id)] == TEXTS
    finally:
        store.close()


def test_a_broken_meta_does_not_hide_the_session_from_the_list(nova_home: Path) -> None:
    session = _make(nova_home)
    _break_meta(session.dir, nova_home)
    metas, problems = list_sessions(nova_home)
    assert [m.id for m in metas] == [session.id] and metas[0].message_count == len(TEXTS)
    assert "meta.json is corrupt" in problems[0]


def test_doctor_reports_and_rebuilds(nova_home: Path) -> None:
    session = _make(nova_home)
    offset = _insert(session.dir / "transcript.jsonl", 2, b"garbage\n")
    _break_meta(session.dir, nova_home)
    _garbage_store(session.dir, nova_home)
    done = runner.invoke(app, ["doctor", session.id, "--json"])
    assert done.exit_code == 0, done.stderr
    report = json.loads(done.stdout)
    found = " ".join(report["sessions"][0]["found"])
    did = " ".join(report["sessions"][0]["did"])
    assert f"at byte {offset}" in found and "meta.json is corrupt" in found and "no row" in found
    assert "rebuilt meta.json" in did and "left 1 damaged record" in did
    assert "nova.db" in " ".join(report["store"]["found"])
    assert json.loads((session.dir / "meta.json").read_text())["message_count"] == len(TEXTS)
    # A second run finds only the damaged line it leaves in place, and does nothing else.
    again = json.loads(runner.invoke(app, ["doctor", "--all", "--json"]).stdout)["sessions"][0]
    assert len(again["found"]) == 1 and f"at byte {offset}" in again["found"][0]
    assert runner.invoke(app, ["doctor"]).exit_code == 1  # an id or --all is required


def test_doctor_fixes_an_undercounting_meta(nova_home: Path) -> None:
    session = _make(nova_home)
    meta = json.loads((session.dir / "meta.json").read_text())
    meta["message_count"] = 1
    (session.dir / "meta.json").write_text(json.dumps(meta))
    report = json.loads(runner.invoke(app, ["doctor", session.id, "--json"]).stdout)["sessions"][0]
    assert "counts 1 message(s), the transcript holds 4" in " ".join(report["found"])
    assert json.loads((session.dir / "meta.json").read_text())["message_count"] == 4


def test_the_real_cli_resumes_past_a_bad_line_and_refuses_it_strictly(nova_home: Path, tmp_path: Path) -> None:
    session = _make(nova_home)
    offset = _insert(session.dir / "transcript.jsonl", 2, b'{"v":99,"type":"message"}\n')
    nova = Path(sys.executable).with_name("nova")
    env = {**os.environ, "NOVA_HOME": str(nova_home)}
    refused = subprocess.run([str(nova), "resume", session.id, "go on", "--provider", "demo", "--json", "--strict"],
                             cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert refused.returncode != 0 and f"at byte {offset}" in refused.stderr
    done = subprocess.run([str(nova), "resume", session.id, "go on", "--provider", "demo", "--json"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"transcript.jsonl at byte {offset}" in done.stderr
    history = Session.open(nova_home, session.id, readonly=True)
    try:
        texts = [m.text for m in history.load_history()]
    finally:
        history.close()
    assert texts[:4] == TEXTS and "go on" in texts
