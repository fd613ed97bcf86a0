"""`Usage`: one codec for usage at rest and in the shapes providers and recorded sessions use, and the
session meta that keeps a running `Usage` (with the 1-hour cache-write split) across reopen."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

from nova.messages import Message
from nova.model import Usage, usage_of
from nova.sessions.meta import META_VERSION, read_meta
from nova.sessions.schema import MessageRecord, message_record, parse_record
from nova.sessions.session import Session

FULL = Usage(input_tokens=1, output_tokens=2, cache_read_tokens=3, cache_write_tokens=40, reasoning_tokens=5,
             cache_write_1h_tokens=30)


def test_every_field_round_trips_and_adds() -> None:
    assert Usage.from_dict(FULL.to_dict()) == FULL
    assert set(FULL.to_dict()) == {f.name for f in fields(Usage)}
    doubled = FULL + FULL
    assert all(getattr(doubled, f.name) == 2 * getattr(FULL, f.name) for f in fields(Usage))


def test_missing_null_unknown_and_junk_values_read_as_zero() -> None:
    assert Usage.from_dict({}) == Usage()
    read = Usage.from_dict({"input_tokens": None, "output_tokens": "7", "cache_read_tokens": "x",
                            "cache_write_tokens": True, "future_field": 9})
    assert read == Usage(output_tokens=7)


def test_anthropic_shape_keeps_the_one_hour_split() -> None:
    read = Usage.from_dict({"input_tokens": 10, "output_tokens": 2, "cache_read_input_tokens": 300,
                            "cache_creation_input_tokens": 50,
                            "cache_creation": {"ephemeral_5m_input_tokens": 20, "ephemeral_1h_input_tokens": 30}})
    assert read == Usage(10, 2, 300, 50, cache_write_1h_tokens=30)


def test_openai_shapes_move_cached_tokens_out_of_input() -> None:
    chat = Usage.from_dict({"prompt_tokens": 2006, "completion_tokens": 300,
                            "prompt_tokens_details": {"cached_tokens": 1920},
                            "completion_tokens_details": {"reasoning_tokens": 12}})
    assert chat == Usage(input_tokens=86, output_tokens=300, cache_read_tokens=1920, reasoning_tokens=12)
    responses = Usage.from_dict({"input_tokens": 5400, "input_tokens_details": {"cached_tokens": 4096},
                                 "output_tokens": 180, "output_tokens_details": {"reasoning_tokens": 128}})
    assert responses == Usage(input_tokens=1304, output_tokens=180, cache_read_tokens=4096, reasoning_tokens=128)
    # A cached figure larger than the prompt (seen from proxies) cannot make input negative.
    assert Usage.from_dict({"prompt_tokens": 5, "prompt_tokens_details": {"cached_tokens": 9}}).input_tokens == 0


def test_transcript_records_and_message_metadata_use_the_codec() -> None:
    record = parse_record(json.dumps(message_record(Message.user("hi"), FULL)), "t:1")
    assert isinstance(record, MessageRecord) and record.usage == FULL
    # A record written before the 1-hour split existed still reads.
    old = {**message_record(Message.user("hi"), None), "usage": {"input_tokens": 4, "output_tokens": 1,
                                                                 "cache_read_tokens": 0, "cache_write_tokens": 0,
                                                                 "reasoning_tokens": 0}}
    record = parse_record(json.dumps(old), "t:2")
    assert isinstance(record, MessageRecord) and record.usage == Usage(4, 1)
    assert usage_of(Message.assistant("ok", metadata={"usage": FULL.to_dict()})) == FULL
    assert usage_of(Message.assistant("ok")) is None


def test_session_meta_holds_usage_with_the_one_hour_split(tmp_path: Path) -> None:
    session = Session.create(tmp_path, title="t", model="claude-sonnet-4-5")
    session.add_cost(FULL, 0.5)
    session.add_cost(FULL, 0.5)
    session.flush()
    on_disk = json.loads((session.dir / "meta.json").read_text())
    assert on_disk["v"] == META_VERSION and on_disk["usage"] == (FULL + FULL).to_dict()
    session.close()
    reopened = Session.open(tmp_path, session.id, readonly=True)
    assert reopened.meta.usage == FULL + FULL
    assert reopened.meta.usage.cache_write_1h_tokens == 60
    assert reopened.meta.total_tokens == 2 * (1 + 2 + 3 + 40)


def test_version_one_meta_migrates_on_read(tmp_path: Path) -> None:
    session = Session.create(tmp_path, title="old", model="claude-sonnet-4-5")
    session.close()
    v1 = {"v": 1, "id": session.id, "title": "old", "message_count": 3, "input_tokens": 100,
          "output_tokens": 10, "cache_read_tokens": 1000, "cache_write_tokens": 50, "reasoning_tokens": 2,
          "cost_usd": 0.25, "compacted_at": None, "extra": {}}
    (session.dir / "meta.json").write_text(json.dumps(v1))
    meta = read_meta(session.dir)
    assert meta.usage == Usage(100, 10, 1000, 50, 2) and meta.message_count == 3 and meta.cost_usd == 0.25
    reopened = Session.open(tmp_path, session.id)
    reopened.add_cost(Usage(input_tokens=1), 0.0)
    reopened.flush()
    reopened.close()
    rewritten = json.loads((session.dir / "meta.json").read_text())
    assert rewritten["v"] == META_VERSION and rewritten["usage"]["input_tokens"] == 101
    assert "input_tokens" not in rewritten
