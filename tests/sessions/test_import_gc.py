"""Importing stays linear in the file's size: no full garbage collection runs while a recording is read.
Reading builds a great many containers (none in cycles); full collections would walk the whole growing
heap again and again, so a file 10x as long took about 13x as long. The young generations are still
collected as usual, and the threshold the process had is back once the import ends."""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from nova.sessions.importers import SessionImportError, read_session_file


def _claude_code(path: Path, lines: int) -> Path:
    """A Claude Code session: a task, then a Bash call and its result per pair of lines."""
    out, parent = [], None
    for i in range(lines):
        record = {"parentUuid": parent, "isSidechain": False, "cwd": "/work", "sessionId": "s", "uuid": f"u{i}",
                  "timestamp": f"2025-10-12T21:{i // 60 % 60:02d}:{i % 60:02d}.000Z"}
        if i == 0:
            record |= {"type": "user", "message": {"role": "user", "content": "run the steps"}}
        elif i % 2:
            record |= {"type": "assistant", "requestId": f"r{i}", "message": {
                "model": "claude-sonnet-4-5-20250929", "id": f"msg{i}", "role": "assistant",
                "content": [{"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {"command": f"echo {i}"}}],
                "usage": {"input_tokens": 4, "cache_read_input_tokens": 1000 + i, "output_tokens": 20}}}
        else:
            record |= {"type": "user", "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": f"t{i - 1}", "content": f"line {i} " * 20}]}}
        out.append(json.dumps(record))
        parent = f"u{i}"
    path.write_text("\n".join(out) + "\n")
    return path


def _chat(path: Path, lines: int) -> Path:
    """An OpenAI chat list, one document: the other way a reader takes a file."""
    messages = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "count"}]
    messages += [{"role": "assistant" if i % 2 else "user", "content": f"step {i} " * 10} for i in range(lines)]
    path.write_text(json.dumps(messages))
    return path


@contextmanager
def _thresholds_seen() -> Iterator[list[int]]:
    """The full-collection threshold in force at every collection that runs inside the block."""
    seen: list[int] = []

    def callback(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            seen.append(gc.get_threshold()[2])

    gc.callbacks.append(callback)
    try:
        yield seen
    finally:
        gc.callbacks.remove(callback)


@pytest.mark.parametrize("write", [_claude_code, _chat], ids=["claude-code", "openai-chat"])
def test_no_full_collection_runs_while_a_recording_is_read(tmp_path: Path, write: object) -> None:
    path = write(tmp_path / "recording.jsonl", 6_000)  # type: ignore[operator]
    before = gc.get_threshold()
    assert before[2] < 1 << 30  # the process collects normally
    with _thresholds_seen() as seen:
        imported = read_session_file(path)
    assert len(imported.messages) > 2_000
    # Young collections ran (the read allocates that much), every one of them with full ones paused.
    assert len(seen) > 10
    assert min(seen) >= 1 << 30
    assert gc.get_threshold() == before


def test_a_refused_file_leaves_the_collector_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "broken.jsonl"
    path.write_text('{"type": "user", "message": {"role": "user", "content": 5}}\n' * 3)
    before = gc.get_threshold()
    with pytest.raises(SessionImportError):
        read_session_file(path)
    assert gc.get_threshold() == before
