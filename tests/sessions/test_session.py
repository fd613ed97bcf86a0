"""`Session`: the directory, meta.json, the store and resume, through the calls the agent loop makes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from nova.errors import StorageError
from nova.messages import Message, SummaryPart
from nova.model import Usage
from nova.sessions.meta import META_VERSION
from nova.sessions.repair import INTERRUPTED
from nova.sessions.schema import BoundaryRecord
from nova.sessions.session import STORE_BATCH, Session, delete_session, list_sessions

from .conftest import assistant_call, results, user


def _new(home: Path, **kw: object) -> Session:
    return Session.create(home, title="t", cwd=str(home), provider="anthropic", model="claude", **kw)  # type: ignore[arg-type]


def test_create_lays_out_the_directory(nova_home: Path) -> None:
    s = _new(nova_home)
    assert s.dir == nova_home / "sessions" / s.id
    assert {p.name for p in s.dir.iterdir()} == {"transcript.jsonl", "meta.json", "tool-results", "tool-output",
                                                 "session.lock"}
    meta = json.loads((s.dir / "meta.json").read_text())
    assert meta["v"] == META_VERSION and meta["title"] == "t" and meta["provider"] == "anthropic"
    assert (nova_home / "nova.db").exists()
    s.close()


def test_record_flush_and_totals(nova_home: Path) -> None:
    s = _new(nova_home)
    s.record_message(user("hi", "m1"))
    s.record_message(assistant_call("m2", "c1", thinking=True), Usage(100, 10, cache_read_tokens=50))
    s.add_cost(Usage(100, 10, cache_read_tokens=50), 0.25)
    s.record_event("tool_metadata", {"k": "v"})
    s.flush()
    meta = json.loads((s.dir / "meta.json").read_text())
    assert meta["message_count"] == 2 and meta["usage"]["input_tokens"] == 100 and meta["cost_usd"] == 0.25
    assert s.meta.total_tokens == 160
    assert b"secret reasoning" not in (s.dir / "transcript.jsonl").read_bytes()
    row = s.store.get_session(s.id)
    assert row is not None and row.meta["message_count"] == 2
    s.close()


def _stored(s: Session) -> list[str]:
    return [m.message.id for m in s.store.get_messages(s.id)]


def test_record_messages_stores_later_in_batches_and_at_flush(nova_home: Path) -> None:
    s = _new(nova_home)
    s.record_messages([(user("a", "m1"), None), (assistant_call("m2", "c1"), Usage(100, 10))], store_later=True)
    # The log has them at once, the store's rows wait.
    logged = [json.loads(line) for line in (s.dir / "transcript.jsonl").read_text().splitlines()]
    assert [r["message"]["id"] for r in logged if r["type"] == "message"] == ["m1", "m2"]
    assert logged[-1]["usage"]["input_tokens"] == 100
    assert _stored(s) == [] and s.meta.message_count == 2
    s.flush()
    assert _stored(s) == ["m1", "m2"]
    batch = [(user(f"u{i}", f"b{i}"), None) for i in range(STORE_BATCH)]
    s.record_messages(batch[:-1], store_later=True)
    assert _stored(s) == ["m1", "m2"]
    s.record_messages(batch[-1:], store_later=True)  # the batch is full: written, in order
    assert _stored(s) == ["m1", "m2", *(f"b{i}" for i in range(STORE_BATCH))]
    s.close()


def test_rows_held_back_are_written_before_any_write_that_needs_them(nova_home: Path) -> None:
    s = _new(nova_home)
    s.record_messages([(user("a", "m1"), None), (assistant_call("m2", "c1"), None), (results("m3", "c1"), None)],
                      store_later=True)
    snipped = results("m3", "c1").with_parts([results("m3", "c1").parts[0].__class__("c1", "[... snipped ...]")])
    s.update_message_content("m3", snipped)  # a rewrite of a row that was still waiting
    s.record_messages([(assistant_call("m4", "c2"), None)], store_later=True)
    s.record_message(results("m5", "c2"))  # a direct record keeps the order of the log
    assert _stored(s) == ["m1", "m2", "m3", "m4", "m5"]
    s.close()
    again = Session.open(nova_home, s.id)
    history = again.load_history()
    assert [m.id for m in history] == ["m1", "m2", "m3", "m4", "m5"]
    assert history[2].tool_results()[0].content == "[... snipped ...]"
    again.close()


def test_rows_held_back_are_stored_when_the_session_closes(nova_home: Path) -> None:
    s = _new(nova_home)
    s.record_messages([(user("a", "m1"), None)], store_later=True)
    s.close()
    again = Session.open(nova_home, s.id)
    assert _stored(again) == ["m1"]
    again.close()


def test_resume_after_boundary_with_repair(nova_home: Path) -> None:
    s = _new(nova_home)
    for m in [user("a", "m1"), assistant_call("m2", "c1"), results("m3", "c1")]:
        s.record_message(m)
    summary = Message(role="user", parts=(SummaryPart("[Previous conversation summary]\nwork", ("m1", "m2")),), id="sum1")
    s.record_compact_boundary(BoundaryRecord(
        id="", summary="work", trigger="threshold", tokens_before=5000, tokens_after=800, duration_ms=12.5,
        covers=("m1", "m2"), messages=(summary,),
    ))
    s.record_message(assistant_call("m4", "c2"))  # the session dies before c2 returns
    s.close()

    again = Session.open(nova_home, s.id)
    history = again.load_history()
    assert [m.id for m in history] == ["sum1", "m4", "m4.results"]
    assert history[-1].tool_results()[0].content == INTERRUPTED
    assert again.last_repair is not None and again.last_repair.synthetic_results == ["c2"]
    assert again.meta.compacted_at is not None
    assert [m.message.id for m in again.store.get_messages(s.id)] == ["m3", "sum1", "m4"]
    again.close()


def test_snipped_content_from_the_store_wins_on_resume(nova_home: Path) -> None:
    s = _new(nova_home)
    for m in [user("a", "m1"), assistant_call("m2", "c1"), results("m3", "c1")]:
        s.record_message(m)
    snipped = results("m3", "c1").with_parts([results("m3", "c1").parts[0].__class__("c1", "[... snipped ...]")])
    s.update_message_content("m3", snipped)
    s.close()
    again = Session.open(nova_home, s.id)
    assert again.load_history()[-1].tool_results()[0].content == "[... snipped ...]"
    assert b"out c1" in (s.dir / "transcript.jsonl").read_bytes()  # the raw log keeps the original
    again.close()


def test_history_loaded_after_more_records_includes_them(nova_home: Path) -> None:
    """`open` keeps the tail it parsed for `load_history`; anything recorded in between is not lost."""
    s = _new(nova_home)
    s.record_message(user("a", "m1"))
    s.close()
    again = Session.open(nova_home, s.id)
    again.record_message(assistant_call("m2", "c1"))
    again.record_message(results("m3", "c1"))
    snipped = results("m3", "c1").with_parts([results("m3", "c1").parts[0].__class__("c1", "[... snipped ...]")])
    again.update_message_content("m3", snipped)
    history = again.load_history()
    assert [m.id for m in history] == ["m1", "m2", "m3"] and history[-1] == snipped
    assert [m.id for m in again.load_history()] == ["m1", "m2", "m3"]  # and again, from the file
    again.close()


def test_open_rejects_bad_ids_and_missing_sessions(nova_home: Path) -> None:
    for bad in ["../x", "a/b", "", ".hidden", "a..b", "x" * 200]:
        with pytest.raises(StorageError, match="invalid session id"):
            Session.open(nova_home, bad)
    with pytest.raises(StorageError, match="no session"):
        Session.open(nova_home, "nope")


def test_corrupt_meta_is_rebuilt_from_the_transcript_and_kept(nova_home: Path) -> None:
    s = _new(nova_home)
    s.record_message(user("hello there", "m1"))
    s.close()
    (s.dir / "meta.json").write_text("{broken")
    metas, problems = list_sessions(nova_home)  # listed from the transcript, changing nothing
    assert [m.id for m in metas] == [s.id] and "corrupt" in problems[0]
    ro = Session.open(nova_home, s.id, readonly=True)
    assert ro.meta.message_count == 1 and any("corrupt" in n for n in ro.notices)
    ro.close()
    assert (s.dir / "meta.json").read_text() == "{broken"
    rw = Session.open(nova_home, s.id)
    assert rw.meta.message_count == 1 and rw.meta.title == "hello there"
    assert [m.id for m in rw.load_history()] == ["m1"]
    rw.close()
    (kept,) = s.dir.glob("meta.json.corrupt-*")
    assert kept.read_text() == "{broken"
    assert json.loads((s.dir / "meta.json").read_text())["message_count"] == 1
    # A meta.json of a newer Nova is not damage: it is refused, not overwritten.
    (s.dir / "meta.json").write_text(json.dumps({"v": 9, "id": s.id}))
    with pytest.raises(StorageError, match="newer Nova"):
        Session.open(nova_home, s.id)


def test_unreadable_directory(nova_home: Path) -> None:
    """CI runs as root, where chmod cannot make a directory unreadable: the open is made to fail the
    way an unreadable directory does (PermissionError from the OS) by opening it as another user."""
    s = _new(nova_home)
    s.close()
    if os.geteuid() != 0:
        s.dir.chmod(0)
        try:
            with pytest.raises(StorageError, match="not readable"):
                Session.open(nova_home, s.id)
        finally:
            s.dir.chmod(0o700)
        return
    import subprocess
    import sys

    for parent in reversed(s.dir.parents):  # let "nobody" reach the session folder itself…
        if str(parent).startswith(str(nova_home.parent.parent.parent)):
            parent.chmod(parent.stat().st_mode | 0o005)
    s.dir.chmod(0o700)  # …which only root may read, so "nobody" gets EACCES there
    script = (
        "import os, sys\nfrom pathlib import Path\nfrom nova.errors import StorageError\n"
        "from nova.sessions.session import Session\nos.setgid(65534); os.setuid(65534)\n"
        "try:\n    Session.open(Path(sys.argv[1]), sys.argv[2])\nexcept StorageError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", script, str(nova_home), s.id], capture_output=True, text=True,
                         timeout=60)
    assert "not readable" in out.stdout, out.stdout + out.stderr


def test_readonly_open_reports_but_does_not_quarantine(nova_home: Path) -> None:
    s = _new(nova_home)
    s.record_message(user("a", "m1"))
    s.close()
    with (s.dir / "transcript.jsonl").open("ab") as f:
        f.write(b'{"v":1,"ty')
    ro = Session.open(nova_home, s.id, readonly=True)
    assert ro.recovered is not None and ro.recovered.quarantined is None
    with pytest.raises(StorageError, match="read-only"):
        ro.record_message(user("b", "m2"))
    ro.close()
    assert len(list(s.dir.glob("transcript.jsonl.corrupt-*"))) == 0
    rw = Session.open(nova_home, s.id)
    assert rw.recovered is not None and rw.recovered.quarantined is not None
    assert [m.id for m in rw.load_history()] == ["m1"]
    rw.close()


def test_delete_keeps_task_state(nova_home: Path) -> None:
    s = _new(nova_home)
    s.put_task_state({"goal": "g"})
    s.close()
    delete_session(nova_home, s.id)
    assert not s.dir.exists()
    from nova.sessions.sqlite import SQLiteSessionStore

    store = SQLiteSessionStore(nova_home / "nova.db")
    assert store.get_session(s.id) is None and store.get_task_state(s.id) == {"goal": "g"}
    store.close()


def test_create_refuses_an_existing_id(nova_home: Path) -> None:
    _new(nova_home, session_id="fixed").close()
    with pytest.raises(StorageError, match="already exists"):
        _new(nova_home, session_id="fixed")
    assert Session.open(nova_home, "fixed").meta.title == "t"


def test_a_boundary_without_an_id_gets_a_fresh_one(nova_home: Path) -> None:
    s = _new(nova_home)
    first = s.record_compact_boundary(BoundaryRecord(id="", summary="x"))
    second = s.record_compact_boundary(BoundaryRecord(id="", summary="y"))
    kept = s.record_compact_boundary(BoundaryRecord(id="cmp_mine", summary="z"))
    s.close()
    assert first.startswith("cmp") and second.startswith("cmp") and first != second and kept == "cmp_mine"
    assert first in (s.dir / "transcript.jsonl").read_text(encoding="utf-8")


def test_the_package_exports_resolve_lazily() -> None:
    import subprocess
    import sys

    import nova.sessions

    for name in nova.sessions.__all__:
        assert getattr(nova.sessions, name) is not None
    # A command that only lists sessions does not load the importers or the transcript reader.
    probe = ("import sys, nova.sessions; from nova.sessions import SessionMeta; "
             "print(sorted(m for m in ('nova.sessions.importers', 'nova.sessions.transcript', 'pydantic_core') "
             "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
