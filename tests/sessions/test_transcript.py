"""The raw log: one line per record, backwards resume, torn-tail quarantine, schema versions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nova.errors import StorageError
from nova.messages import Message, SummaryPart, TextPart
from nova.model import Usage
from nova.sessions.schema import (
    BoundaryRecord,
    EventRecord,
    MessageRecord,
    SchemaVersionError,
    boundary_record,
    encode,
    event_record,
    message_record,
    parse_record,
)
from nova.sessions.transcript import Transcript, _decode, _decode_boundary, _decode_message, _reverse_lines

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
    t.append_boundary(BoundaryRecord(id="b1", summary="first", covers=("m1",)))
    t.append_message(user("middle", "m2"))
    t.append_boundary(BoundaryRecord(id="b2", summary="second", covers=("m2",), messages=(user("kept", "m2"),), tokens_before=900))
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
    t2.append_boundary(BoundaryRecord(id="b", summary="what happened", covers=("x",)))
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


def test_a_newer_schema_is_skipped_or_refused_strictly_and_nothing_changes(tmp_path: Path) -> None:
    t = _transcript(tmp_path)
    t.append_message(user("one", "m1"))
    offset = t.path.stat().st_size
    with t.path.open("ab") as f:
        f.write(b'{"v":2,"type":"message","ts":1,"message":{}}\n{"v":1,"type":"mess')
    before = t.path.read_bytes()
    tail = t.read_tail()
    assert [m.id for m in tail.messages()] == ["m1"]
    assert [b.offset for b in tail.bad] == [offset] and "schema version 2" in tail.bad[0].reason
    with pytest.raises(StorageError, match="incomplete last record"):
        t.read_tail(strict=True)
    with pytest.raises(SchemaVersionError, match=f"at byte {offset}"):
        list(t.iter_records(strict=True))
    assert t.path.read_bytes() == before
    assert list(tmp_path.iterdir()) == [t.path]


def test_garbage_line_is_skipped_with_its_offset_or_a_clear_strict_error(tmp_path: Path) -> None:
    t = _transcript(tmp_path)
    t.path.write_bytes(b"not json\n")
    assert "not valid JSON" in t.read_tail().bad[0].reason
    with pytest.raises(StorageError, match="at byte 0: not valid JSON"):
        t.read_tail(strict=True)
    t.path.write_bytes(b'{"type":"message"}\n')
    with pytest.raises(StorageError, match="no schema version"):
        t.read_tail(strict=True)


@settings(max_examples=200, deadline=None)
@given(lines=st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=12),
       block=st.integers(1, 50))
def test_reading_backwards_gives_every_line_and_its_offset(tmp_path_factory: pytest.TempPathFactory,
                                                           lines: list[bytes], block: int) -> None:
    """Whatever the block size, lines spanning blocks and empty lines included."""
    path = tmp_path_factory.mktemp("rev") / "t.jsonl"
    data = b"".join(line + b"\n" for line in lines)
    path.write_bytes(data)
    expected, offset = [], 0
    for line in lines:
        expected.append((offset, line))
        offset += len(line) + 1
    with path.open("rb") as f:
        assert list(_reverse_lines(f, len(data), block)) == expected[::-1]


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


RECORD_DRAWS = dict(text=st.text(), data=st.dictionaries(st.text(max_size=8), _JSON, max_size=5),
                    ts=st.floats(allow_nan=False))


def check_the_quick_decoder_reads_every_record_as_the_reference_reader_does(text: str, data: dict, ts: float) -> None:
    """Resume decodes with pydantic-core's parser and falls back to `parse_record` on anything it
    refuses; whatever it does accept must come out exactly as `parse_record` reads it."""
    lines = [
        encode(message_record(Message(role="user", parts=(TextPart(text),), id=text or "m"), ts=ts)),
        encode(message_record(assistant_call("a1", "c1"), Usage(3, 4, cache_read_tokens=5), ts=ts)),
        encode(event_record(text, data, ts=ts)),
        encode(boundary_record(BoundaryRecord(id="b", summary=text, covers=(text, "x"), messages=(user(text, "u"),)), ts=ts)),
    ]
    for line in lines:
        reference = parse_record(line, "here")
        message = _decode_message(line.rstrip(b"\n"))
        assert message is None or (isinstance(reference, MessageRecord) and message == reference.message)
        try:
            quick = _decode(line.rstrip(b"\n"))
        except (ValueError, StorageError):
            continue
        assert quick == reference


@settings(max_examples=60, deadline=None)
@given(**RECORD_DRAWS)
def test_the_quick_decoder_reads_every_record_as_the_reference_reader_does(**drawn: Any) -> None:
    check_the_quick_decoder_reads_every_record_as_the_reference_reader_does(**drawn)


@pytest.mark.slow  # the same property over 300 examples
@settings(max_examples=300, deadline=None)
@given(**RECORD_DRAWS)
def test_the_quick_decoder_reads_every_record_as_the_reference_reader_does_over_many_records(**drawn: Any) -> None:
    check_the_quick_decoder_reads_every_record_as_the_reference_reader_does(**drawn)


@settings(max_examples=300, deadline=None)
@given(ids=st.lists(st.text(max_size=6), max_size=6), summary=st.sampled_from(["same", "longer", "reversed"]),
       extra=st.booleans())
def test_a_first_compaction_boundary_reads_the_same_when_its_ids_are_decoded_once(
    ids: list[str], summary: str, extra: bool
) -> None:
    """The boundary of a first compaction lists its folded ids twice (its own `covers` and its summary
    part's); the quick reader decodes them once when the bytes prove the lists equal, and must read
    every boundary exactly as `parse_record` does (ids with brackets, quotes, commas included)."""
    summary_covers = {"same": ids, "longer": [*ids, "other"], "reversed": [i[::-1] for i in ids]}[summary]
    parts = [SummaryPart("summary", covers=tuple(summary_covers))]
    if extra:  # a second part listing ids: the shared list can no longer be told apart
        parts.append(SummaryPart("again", covers=tuple(ids)))
    head = Message(role="user", parts=tuple(parts), id="s1")
    line = encode(boundary_record(BoundaryRecord(id="b", summary="s [with] {brackets}", covers=tuple(ids), messages=(head,)), ts=1.0))
    assert _decode(line.rstrip(b"\n")) == parse_record(line, "here")


def test_the_shared_ids_shortcut_is_taken_for_plain_ids() -> None:
    ids = [f"m{i}" for i in range(50)]
    head = Message(role="user", parts=(SummaryPart("summary", covers=tuple(ids)), TextPart("restored")), id="s1")
    line = encode(boundary_record(BoundaryRecord(id="b", summary="s", covers=tuple(ids), messages=(head, user("kept", "u")))))
    quick = _decode_boundary(line.rstrip(b"\n"))
    assert quick is not None and quick == parse_record(line, "here")


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


@pytest.mark.parametrize("first_to_leave", ["first", "second"])
def test_overlapping_reads_leave_the_garbage_collector_as_they_found_it(tmp_path: Path, first_to_leave: str) -> None:
    """Reads pause full collections; two reads on two threads, ending in either order, must restore
    the threshold the process had (the server resumes sessions from several threads)."""
    import gc
    import threading

    from nova.sessions.transcript import full_collections_paused

    before = gc.get_threshold()
    entered, leave = threading.Event(), threading.Event()

    def second() -> None:
        with full_collections_paused():
            entered.set()
            leave.wait(5)

    with full_collections_paused():  # the first read
        thread = threading.Thread(target=second)
        thread.start()
        entered.wait(5)
        if first_to_leave == "second":
            leave.set()
            thread.join()
        assert gc.get_threshold()[2] > before[2]
    if first_to_leave == "first":
        assert gc.get_threshold()[2] > before[2]  # the second read is still going
        leave.set()
        thread.join()
    assert gc.get_threshold() == before
    t = _transcript(tmp_path)
    t.append_message(user("hi", "m1"))
    t.read_tail()
    assert gc.get_threshold() == before
