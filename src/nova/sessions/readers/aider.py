"""Aider's `.aider.chat.history.md`: Markdown, one `# aider chat started at …` heading per run; `#### `
lines are what the user typed, `> ` lines are Aider's own notes (not sent to the model), everything else
is the model's reply. Aider has no tool calls: the model edits files with SEARCH/REPLACE blocks in its
text, and the notes say which edits were applied (`> Applied edit to x.py`), kept in
`meta["files_edited"]`."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nova.messages import TextPart
from nova.sessions.readers.base import Confidence, ImportedSession, refuse, sure
from nova.sessions.readers.common import Builder, load_text

NAME = "aider"
_STARTED = "# aider chat started at"
_APPLIED = re.compile(r"^> Applied edit to (.+?)\s*$")


class AiderReader:
    name = NAME

    def confidence(self, path: Path, head_records: Sequence[Any]) -> Confidence:
        if path.is_dir():
            return refuse("a directory")
        try:
            with path.open(encoding="utf-8", errors="replace") as handle:
                first = next((line for line in handle if line.strip()), "")
        except OSError as exc:
            return refuse(f"cannot read: {exc.strerror}")
        if first.startswith(_STARTED):
            return sure(0.95)
        return refuse(f"line 1 does not start with {_STARTED!r}")

    def read(self, path: Path, *, strict: bool = False) -> ImportedSession:
        b = Builder()
        edited: list[str] = []
        runs = 0
        role = ""
        block: list[str] = []
        start = 0

        def flush() -> None:
            nonlocal block
            text = "\n".join(block).strip()
            if text and role:
                b.add("user" if role == "user" else "assistant", [TextPart(text)], start)
            block = []

        for number, line in enumerate(load_text(path).splitlines(), 1):
            if line.startswith(_STARTED):
                flush()
                role, runs = "", runs + 1
            elif line.startswith("#### "):
                if role != "user":
                    flush()
                    role, start = "user", number
                block.append(line[5:])
            elif line.startswith(">"):
                applied = _APPLIED.match(line)
                if applied and applied.group(1) not in edited:
                    edited.append(applied.group(1))
            elif role == "user" and not line.strip():
                continue
            else:
                if role != "assistant" and (line.strip() or role == ""):
                    if not line.strip():
                        continue
                    flush()
                    role, start = "assistant", number
                block.append(line)
        flush()
        return ImportedSession(messages=b.messages, system="", format=NAME, source_path=path,
                               meta={"runs": runs, "files_edited": edited})
