"""The raw log: one line per record, backwards resume, torn-tail quarantine, schema versions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nova.errors import StorageError
from nova.providers.base import Usage
from nova.sessions.schema import BoundaryRecord, EventRecord, MessageRecord, SchemaVersionError
from nova.sessions.transcript import Transcript

from .conftest import assistant_call, results, user


def _transcript(tmp_path: Path) -> Transcript:
    return Transcript(tmp_path / "transcript.jsonl")


def test_each_record_is_one_versioned_line(tmp_path: Path) -> None:
    t = _transcript(tmp_path)
    t.append_message(user("hi", "m1"))
    t.append_message(assistant_call("m2", "c1", thinking=True), Usage(10, 2, cache_read_tokens=5))
    t.append_event("tool_metadata", {"x": 1})
    t.sync()
    lines = t.path.read_bytes().splitlines()
    assert len(lines) == 3
    records = [json.loads(line) for line in lines]
    assert all(r["v"] == 1 for r in records)
    assert [r["type"] for r in records] == ["message", "message", "event"]
    assert records[1]["usage"]["cache_read_tokens"] == 5
    assert b"thinking" not in t.path.read_bytes() and b"secret reasoning" not in t.path.read_bytes()
    assert lines[0].startswith(b'{"v":1,"type":"message"')


def test_read_tail_starts_at_the_last_boundary(tmp_path: Path) -> None:
    t = _transcript(tmp_path)
    t.append_message(user("old", "m1"))
    t.append_boundary(id="b1", summary="first", covers=["m1"])
    t.append_message(user("middle", "m2"))
    t.append_boundary(id="b2", summary="second", covers=["m2"], messages=[user("kept", "m2")], tokens_before=900)
    t.append_message(assistant_call("m3", "c1"))
    t.append_event("e", {})
    t.append_message(results("m4", "c1"))
    tail = t.read_tail()
    assert isinstance(tail.boundary, BoundaryRecord) and tail.boundary.id == "b2"
    assert tail.boundary.tokens_before == 900
    assert [type(r) for r in tail.records] == [MessageRecord, EventRecord, MessageRecord]
    assert [m.id for m in tail.messages()] == ["m2", "m3", "m4"]
    # Without messages, the boundary stands in as a summary message.
    t2 = Transcript(tmp_path / "t2.jsonl")
    t2.append_boundary(id="b", summary="what happened", covers=["x"])
    (head,) = t2.read_tail().messages()
    assert "what happened" in head.text and head.role == "user"
    assert [r.type for r in t.iter_records()].count("compact_boundary") == 2


def test_lines_longer_than_a_block_are_read_back(tmp_path: Path) -> None:
    t = _transcript(tmp_path)
    big = "x" * 300_000 + "é\n\"quoted\""
    t.append_message(user(big, "m1"))
    t.append_message(user("small", "m2"))
    assert [m.text for m in t.read_tail().messages()] == [big, "small"]


def test_torn_tail_is_quarantined_and_nothing_before_it_lost(tmp_path: Path) -> None:
    t = _transcript(tmp_path)
    t.append_message(user("one", "m1"))
    t.append_message(user("two", "m2"))
    good = t.path.read_bytes()
    with t.path.open("ab") as f:
        f.write(b'{"v":1,"type":"message","ts":1,"mess')
    tail = t.read_tail()
    assert tail.torn is not None and tail.torn.offset == len(good)
    assert [m.id for m in tail.messages()] == ["m1", "m2"]
    torn = Transcript(t.path).recover()
    assert torn is not None and torn.quarantined is not None
    assert torn.quarantined.name.startswith("transcript.jsonl.corrupt-")
    assert torn.quarantined.read_bytes() == b'{"v":1,"type":"message","ts":1,"mess'
    assert t.path.read_bytes() == good
    assert "incomplete last record" in torn.describe()
    assert Transcript(t.path).recover() is None
    t.append_message(user("three", "m3"))  # appends continue on a clean line
    assert [m.id for m in Transcript(t.path).read_tail().messages()] == ["m1", "m2", "m3"]


def test_a_newer_schema_is_refused_and_nothing_changes(tmp_path: Path) -> None:
    t = _transcript(tmp_path)
    t.append_message(user("one", "m1"))
    with t.path.open("ab") as f:
        f.write(b'{"v":2,"type":"message","ts":1,"message":{}}\n{"v":1,"type":"mess')
    before = t.path.read_bytes()
    with pytest.raises(SchemaVersionError, match="schema version 2"):
        t.read_tail()
    with pytest.raises(SchemaVersionError):
        list(t.iter_records())
    assert t.path.read_bytes() == before
    assert list(tmp_path.iterdir()) == [t.path]


def test_garbage_line_is_a_clear_error(tmp_path: Path) -> None:
    t = _transcript(tmp_path)
    t.path.write_bytes(b"not json\n")
    with pytest.raises(StorageError, match="not valid JSON"):
        t.read_tail()
    t.path.write_bytes(b'{"type":"message"}\n')
    with pytest.raises(StorageError, match="no schema version"):
        t.read_tail()


def test_a_transcript_written_with_nova_kind_resumes_with_typed_origins(tmp_path: Path) -> None:
    """Before `Message.origin`, inserts were marked `metadata["nova_kind"]`; such a log reads the same."""
    from nova.context.compaction import is_nova_insert
    from nova.messages import to_dict

    summary = {**to_dict(user("[summary] earlier work", "s1")), "metadata": {"nova_kind": "summary"}}
    memory = {**to_dict(user("recalled: tabs", "r1")), "metadata": {"nova_kind": "memory", "memories": ["tabs"]}}
    lines = [
        {"v": 1, "type": "compact_boundary", "ts": 1.0, "id": "b1", "summary": "earlier work", "covers": ["m0"],
         "messages": [summary]},
        {"v": 1, "type": "message", "ts": 2.0, "message": memory, "usage": None},
        {"v": 1, "type": "message", "ts": 3.0, "message": to_dict(user("go on", "m2")), "usage": None},
    ]
    path = tmp_path / "transcript.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    messages = Transcript(path).read_tail().messages()
    assert [(m.id, m.origin) for m in messages] == [("s1", "summary"), ("r1", "memory"), ("m2", None)]
    assert messages[1].metadata == {"memories": ["tabs"]}
    assert [is_nova_insert(m) for m in messages] == [True, True, False]
