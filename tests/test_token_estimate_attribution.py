"""benchmarks/token_estimate.py names what a recorded call held that its file does not (the calls stay in
the figures): a CLAUDE.md Claude Code attached on a first successful read under its directory, plan
mode's instructions, and a publisher's redaction placeholders."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from nova.messages import Message, TextPart, ToolResultPart
from nova.tokens.calibration import GrowthStep, claude_code_steps

ROOT = Path(__file__).resolve().parents[1]


def _benchmark() -> ModuleType:
    spec = importlib.util.spec_from_file_location("token_estimate", ROOT / "benchmarks" / "token_estimate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("token_estimate", module)
    spec.loader.exec_module(module)
    return module


def _session(tmp_path: Path, reads: list[tuple[str, bool]]) -> Path:
    """A Claude Code file whose calls each read one file (`(path, failed)`), the next call answering."""
    records: list[dict[str, Any]] = []
    parent: str | None = None
    for index, (path, failed) in enumerate([*reads, ("", False)]):
        uuid = f"a{index}"
        content: list[dict[str, Any]] = [{"type": "tool_use", "id": f"t{index}", "name": "Read",
                                          "input": {"file_path": path}}] if path else [{"type": "text", "text": "done"}]
        records.append({"type": "assistant", "uuid": uuid, "parentUuid": parent, "cwd": "/work/repo",
                        "message": {"id": f"m{index}", "model": "claude-sonnet-4-5", "content": content,
                                    "usage": {"input_tokens": 1000 + 500 * index, "output_tokens": 20}}})
        parent = uuid
        if path:
            result = {"type": "tool_result", "tool_use_id": f"t{index}", "is_error": failed,
                      "content": "<tool_use_error>File does not exist.</tool_use_error>" if failed else "x = 1"}
            records.append({"type": "user", "uuid": f"u{index}", "parentUuid": parent, "cwd": "/work/repo",
                            "message": {"role": "user", "content": [result]}})
            parent = f"u{index}"
    file = tmp_path / "session.jsonl"
    file.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return file


def test_a_first_successful_read_under_a_directory_with_a_claude_md_is_named(tmp_path: Path) -> None:
    bench = _benchmark()
    path = _session(tmp_path, [("/work/repo/src/a/missing.ts", True), ("/work/repo/src/a/x.ts", False),
                               ("/work/repo/src/a/b/y.ts", False), ("/work/repo/docs/z.md", False)])
    steps = claude_code_steps(path)
    named = bench.unrecorded_content(path, steps, {"src/a", "docs"})
    kinds = [named[(step.source, step.real)] for step in steps]
    # A failed read attaches nothing; the first read under src/a does; a deeper read adds nothing new
    # (src/a/b holds no CLAUDE.md); docs/ is a directory of its own.
    assert kinds == [[], ["src/a/CLAUDE.md attached"], [], ["docs/CLAUDE.md attached"]]
    # A CLAUDE.md read on purpose is in the record and is not attached again.
    path = _session(tmp_path, [("/work/repo/src/a/CLAUDE.md", False), ("/work/repo/src/a/x.ts", False)])
    steps = claude_code_steps(path)
    assert all(not kinds for kinds in bench.unrecorded_content(path, steps, {"src/a"}).values())


def test_redaction_placeholders_are_counted_by_the_length_they_keep() -> None:
    bench = _benchmark()
    step = GrowthStep("s", "gpt-5", 1000, 2000, (
        Message(role="user", parts=(ToolResultPart("c1", "[REDACTED_OUTPUT len=136 sha=bc081c6b]"),
                                    TextPart("[REDACTED_TEXT len=40 sha=9759baf3] and [REDACTED_EMAIL]"))),))
    assert bench.redacted_characters(step) == 176
