"""Aider's `.aider.chat.history.md`: Markdown that Aider appends to as it runs.

- `# aider chat started at …` opens each run;
- `#### ` lines are what the user typed, one per input line. Lines starting with `/` or `!` are commands
  to Aider itself (`/add`, `/run`, `/ask …`), never sent to the model as typed: they are listed in
  `meta["commands"]`, not imported (a command that asks the model, `/ask …`, logs its question again
  as a plain `#### ` line, which is imported). `<blank>` is an empty input;
- `> ` lines are Aider's own notes (not sent to the model): `> Applied edit to x.py` is kept in
  `meta["files_edited"]`, `> Tokens: 2.4k sent, 98 received. Cost: $0.0020 message, …` becomes the usage
  (and the recorded price) of the reply before it, and `> Main model: <id> with … edit format` (at each
  start and each `/model`) names the model of the replies after it (`meta["model"]`: the last named);
- everything else is the model's reply. When two replies follow each other without user input, Aider
  sent the model a message of its own between them (a failed edit, lint errors): the notes written
  between the replies stand in for it, as a user message marked `is_meta`.

Aider ends every line it writes itself with a Markdown line break (two spaces), so when a file has such
lines, a reply's own `#### ` heading or `> ` quote (no trailing spaces) stays part of the reply; a file
written without them is read by prefix alone. Aider has no tool calls: the model edits files with
SEARCH/REPLACE blocks in its text, kept verbatim."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from nova.errors import SessionImportError
from nova.messages import TextPart
from nova.model import Usage
from nova.sessions.readers.base import Confidence, ImportedSession, refuse, sure
from nova.sessions.readers.common import Builder, load_text

NAME = "aider"
_STARTED = "# aider chat started at"
_APPLIED = re.compile(r"^Applied edit to (.+?)\s*$")
_TOKENS = re.compile(r"^Tokens: (?P<sent>[\d.,]+[kM]?) sent(?:, (?P<write>[\d.,]+[kM]?) cache write)?"
                     r"(?:, (?P<hit>[\d.,]+[kM]?) cache hit)?, (?P<received>[\d.,]+[kM]?) received")
_COST = re.compile(r"Cost: \$(?P<cost>[\d.,]+) message")
# "Main model: openrouter/deepseek/deepseek-chat with diff edit format" (older Aider: "Model: gpt-4 using …").
_MODEL = re.compile(r"^(?:Main model|Model): (?P<model>\S+) (?:with|using) ")
_SCALE = {"k": 1_000, "M": 1_000_000}


class AiderReader:
    name = NAME

    def confidence(self, path: Path, head_records: Sequence[Any]) -> Confidence:
        if path.is_dir():
            return refuse("a directory")
        try:
            first = next((line for line in load_text(path).splitlines() if line.strip()), "")
        except SessionImportError as exc:
            return refuse(f"cannot read: {exc}")
        if first.startswith(_STARTED):
            return sure(0.95)
        return refuse(f"line 1 does not start with {_STARTED!r}")

    def read(self, path: Path, *, strict: bool = False) -> ImportedSession:
        lines = load_text(path).splitlines()
        # Aider's own lines end with a Markdown line break; when the file has them, they tell its lines
        # from a reply's headings and quotes.
        marked = any(line.startswith("#### ") and line.endswith("  ") for line in lines)
        p = _Parse()
        for number, line in enumerate(lines, 1):
            own = line.endswith("  ") or not marked
            if line.startswith(_STARTED):
                p.flush()
                p.role, p.notes = "", []
                p.runs += 1
            elif line.startswith("#### ") and own:
                p.user(line[5:].rstrip(), number)
            elif (line.startswith("> ") or line.rstrip() == ">") and own:
                p.note(line[2:].strip(), number)
            else:
                p.reply(line, number)
        p.flush()
        responses = sum(m.role == "assistant" for m in p.b.messages)
        return ImportedSession(messages=p.b.messages, system="", format=NAME, source_path=path,
                               meta={"runs": p.runs, "files_edited": p.edited, "commands": p.commands,
                                     "source_counts": {"responses": responses, "tool_calls": 0, "tool_results": 0},
                                     **({"model": p.model} if p.model else {})})


@dataclass(slots=True)
class _Parse:
    b: Builder = field(default_factory=Builder)
    role: str = ""
    block: list[str] = field(default_factory=list)
    start: int = 0
    notes: list[str] = field(default_factory=list)
    """Aider's notes since the last reply: what it told the model when it answered a reply itself."""
    notes_at: int = 0
    runs: int = 0
    edited: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    model: str = ""
    """The model Aider last said it sends to ("Main model: …")."""

    def flush(self) -> None:
        text = "\n".join(self.block).strip()
        if text and self.role == "assistant":
            self.b.add("assistant", [TextPart(text)], self.start, metadata={"model": self.model} if self.model else None)
        elif text and self.role:
            self.b.add("user", [TextPart(text)], self.start)
        self.block = []

    def user(self, typed: str, number: int) -> None:
        if self.role != "user":
            self.flush()
            self.role, self.start = "user", number
        self.notes = []
        if typed.startswith(("/", "!")):
            self.commands.append(typed)
        elif typed != "<blank>":
            self.block.append(typed)

    def note(self, text: str, number: int) -> None:
        if self.role == "assistant":  # a note ends the reply it follows
            self.flush()
            self.role = "notes"
        applied = _APPLIED.match(text)
        if applied and applied.group(1) not in self.edited:
            self.edited.append(applied.group(1))
        if named := _MODEL.match(text):
            self.model = named["model"]
        tokens = _TOKENS.match(text)
        last = self.b.messages[-1] if self.b.messages else None
        if tokens and last is not None and last.role == "assistant" and "usage" not in last.metadata:
            # `sent` is the provider's whole prompt figure, cache hits and writes inside it.
            write, hit = _count(tokens["write"]), _count(tokens["hit"])
            usage = Usage(input_tokens=max(_count(tokens["sent"]) - write - hit, 0),
                          output_tokens=_count(tokens["received"]), cache_write_tokens=write, cache_read_tokens=hit)
            recorded: dict[str, Any] = {"usage": usage.to_dict()}
            if (cost := _COST.search(text)) is not None:
                recorded["cost_usd"] = float(cost["cost"].replace(",", ""))
            self.b.messages[-1] = replace(last, metadata={**last.metadata, **recorded})
        elif text and self.role == "notes":
            self.notes_at = self.notes_at if self.notes else number
            self.notes.append(text)

    def reply(self, line: str, number: int) -> None:
        if self.role == "assistant":
            self.block.append(line)
            return
        if not line.strip():
            return
        self.flush()
        if self.role == "notes" and self.notes and self.b.messages and self.b.messages[-1].role == "assistant":
            # Aider answered the last reply itself; its notes are the nearest record of what it sent.
            self.b.add("user", [TextPart("\n".join(self.notes))], self.notes_at, metadata={"is_meta": True})
        self.notes = []
        self.role, self.start = "assistant", number
        self.block.append(line)


def _count(figure: str | None) -> int:
    """Aider's token figures: `98`, `2.4k`, `24k`, `1.2M`."""
    if not figure:
        return 0
    scale = _SCALE.get(figure[-1], 1)
    number = figure.rstrip("kM").replace(",", "")
    try:
        return round(float(number) * scale)
    except ValueError:
        return 0
