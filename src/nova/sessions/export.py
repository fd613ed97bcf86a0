"""Turning a session record into something to read or carry elsewhere: raw JSONL, Markdown, and the
import/resume conveniences the CLI uses."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from nova.messages import ImagePart, Message, SummaryPart, TextPart, ToolResultPart, ToolUsePart
from nova.model import Usage, call_model, is_model_reply, main_model
from nova.providers.pricing import cost_usd
from nova.sessions.importers import (
    IMPORTED_EVENT,
    SYSTEM_PROMPT_EVENT,
    ImportedSession,
    read_session_file,
    usage_of,
)
from nova.sessions.meta import SessionMeta
from nova.sessions.readers.nova import SESSION_EVENT, TOOLS_EVENT, header_event_data, tools_event_data
from nova.sessions.repair import interrupted_answers
from nova.sessions.schema import BoundaryRecord, EventRecord, MessageRecord, Record, encode, event_record
from nova.sessions.session import Session, list_sessions
from nova.sessions.store import SessionStore
from nova.sessions.transcript import BadLine

__all__ = [
    "ImportResult",
    "Resumed",
    "boundary_sizes",
    "import_session",
    "import_sessions",
    "iter_jsonl",
    "latest_session_id",
    "render_markdown",
    "resume",
]


def iter_jsonl(
    session: Session, *, strict: bool = False, on_bad: Callable[[BadLine], None] | None = None
) -> Iterator[bytes]:
    """The raw log, readable records only, each ending in a newline: a torn last line is not exported,
    a damaged line is skipped and passed to `on_bad` (with `strict`, either one raises). It starts with
    one `session` event holding what only meta.json knows (title, working directory, provider, model),
    so that `nova sessions import` of the file gives the session back under its own title."""
    meta = session.meta
    yield encode(event_record(SESSION_EVENT, header_event_data(
        title=meta.title, cwd=meta.cwd, provider=meta.provider, model=meta.model, session_id=meta.id),
        ts=meta.created_at))
    for _, line, _ in session.transcript.iter_lines(strict=strict, on_bad=on_bad):
        yield line


def _fence(text: str, lang: str = "") -> str:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}{lang}\n{text}\n{ticks}"


def render_message_markdown(message: Message) -> str:
    lines = [f"### {message.role}"]
    for part in message.parts:
        if isinstance(part, TextPart):
            lines.append(part.text)
        elif isinstance(part, SummaryPart):
            lines.append(f"**Summary** (covers {len(part.covers)} messages)\n\n{part.text}")
        elif isinstance(part, ToolUsePart):
            lines.append(f"**Tool call** `{part.name}` (`{part.id}`)\n\n" + _fence(json.dumps(dict(part.input), indent=2, ensure_ascii=False), "json"))
        elif isinstance(part, ToolResultPart):
            label = "Tool error" if part.is_error else "Tool result"
            lines.append(f"**{label}** for `{part.tool_use_id}`\n\n" + _fence(part.content))
        elif isinstance(part, ImagePart):
            lines.append(f"*[image {part.media_type or part.url}]*")
    return "\n\n".join(lines)


def boundary_sizes(record: BoundaryRecord) -> str:
    """The view's size before and after a compaction, in words; a size the record does not know (0: an
    imported compaction with no call measured after it, or Codex's, which records none) is said to be
    unknown, never shown as 0 tokens."""
    before, after = record.tokens_before, record.tokens_after
    if before and after:
        return f"{before:,} → {after:,} tokens"
    if before:
        return f"{before:,} tokens → size after not recorded"
    if after:
        return f"size before not recorded → {after:,} tokens"
    return "sizes not recorded"


def render_boundary_markdown(record: BoundaryRecord) -> str:
    return (
        f"---\n\n> **Compaction boundary** ({record.trigger}): {boundary_sizes(record)}, "
        f"{len(record.covers)} messages folded, {record.duration_ms:.0f} ms\n\n"
        f"#### Summary\n\n{record.summary}\n\n---"
    )


def render_markdown(meta: SessionMeta, records: Iterable[Record]) -> str:
    head = [
        f"# {meta.title or meta.id}",
        "",
        f"- session: `{meta.id}`",
        f"- provider / model: {meta.provider or '-'} / {meta.model or '-'}",
        (f"- cwd: `{meta.cwd}`" if meta.cwd else "- cwd: unknown (not recorded)")
        + (f" (git root `{meta.git_root}`)" if meta.git_root else ""),
        f"- context: {meta.last_context_tokens} tokens at the last model call; tokens billed: "
        f"{meta.total_tokens}; cost: {f'${meta.cost_usd:.4f}' if meta.cost_known else 'unknown'}",
    ]
    body: list[str] = []
    for record in records:
        if isinstance(record, MessageRecord):
            body.append(render_message_markdown(record.message))
        elif isinstance(record, BoundaryRecord):
            body.append(render_boundary_markdown(record))
        elif isinstance(record, EventRecord) and record.name == SYSTEM_PROMPT_EVENT:
            body.append("### system\n\n" + str(record.data.get("text", "")))
    return "\n".join(head) + "\n\n" + "\n\n".join(body) + "\n"


@dataclass(frozen=True, slots=True)
class ImportResult:
    """What `import_sessions` made: the session, its message count, the records the reader skipped, and
    the child sessions (sub-agents) imported with it, each `(id, messages)`."""

    session_id: str
    messages: int
    skipped: tuple[str, ...] = ()
    children: tuple[tuple[str, int], ...] = ()
    child_sources: tuple[Path, ...] = ()
    """The files the children were read from (a sub-agent's own file), so a bulk import skips them."""
    child_kinds: tuple[str, ...] = ()
    """What each child is, in `children` order: "sub-agent", or "compaction summary" (the agent Claude Code
    ran a compaction's summary call as)."""
    run: str = ""
    """Which run of a file holding several this is (`ImportedSession.siblings`); "" for a one-session file."""
    sub_agent_of: str = ""
    """For a sub-agent's own file imported alone (its session's file was not imported with it): the
    recorded id of the session that ran it; "" otherwise."""
    siblings: tuple[ImportResult, ...] = ()
    """The sessions made from the file's other runs, one each."""

    def runs(self) -> tuple[ImportResult, ...]:
        return (self, *self.siblings)


def import_session(
    path: str | Path, home: Path, *, title: str | None = None, store: SessionStore | None = None
) -> tuple[str, int]:
    """Read a recorded session (any supported format) into a new Nova session. Returns (id, messages)."""
    result = import_sessions(path, home, title=title, store=store)
    return result.session_id, result.messages


def import_sessions(
    path: str | Path, home: Path, *, title: str | None = None, store: SessionStore | None = None,
    strict: bool = False,
) -> ImportResult:
    """Read a recorded session into a new Nova session, with a child session for each sub-agent it ran
    (linked both ways by events). A file holding several runs (OpenHands `output.jsonl`) gives one session
    per run: the first is returned, the others are its `siblings`. With `strict`, a record the reader
    could not use refuses the file."""
    imported = read_session_file(path, strict=strict)
    first, *others = [_import_run(run, home, title=title if not imported.siblings or title is None
                                  else f"{title} / {run.meta.get('run')}", store=store)
                      for run in imported.runs()]
    return replace(first, siblings=tuple(others))


def _import_run(imported: ImportedSession, home: Path, *, title: str | None, store: SessionStore | None
                ) -> ImportResult:
    session_id, recorded = _write_imported(imported, home, title=title, store=store, parent=None)
    children = []
    numbers: dict[str, int] = {}
    # The agent Claude Code ran a compaction's summary call as is no sub-agent the model started.
    kinds = tuple("compaction summary" if child.meta.get("compaction_run") else "sub-agent"
                  for child in imported.children)
    for child, kind in zip(imported.children, kinds, strict=True):
        numbers[kind] = numbers.get(kind, 0) + 1
        child_title = f"{title or imported.title or imported.source_path.stem} / {kind} {numbers[kind]}"
        child_id, child_recorded = _write_imported(child, home, title=child_title, store=store, parent=session_id)
        children.append((child_id, child_recorded))
    if children:
        with Session.open(home, session_id, store=store) as parent:
            for (child_id, _), child in zip(children, imported.children, strict=True):
                parent.record_event("child_session", {"session_id": child_id,
                                                      "tool_use_id": child.meta.get("parent_tool_use_id")})
    skipped = tuple(s.describe() for s in imported.skipped) + tuple(
        s.describe() for child in imported.children for s in child.skipped)
    return ImportResult(session_id=session_id, messages=recorded, skipped=skipped,
                        children=tuple(children), child_kinds=kinds,
                        child_sources=tuple(c.source_path for c in imported.children
                                            if c.source_path != imported.source_path),
                        run=str(imported.meta.get("run") or ""),
                        sub_agent_of=str(imported.meta.get("parent_session") or "")
                        if imported.meta.get("sidechain") else "")


def _write_imported(imported: ImportedSession, home: Path, *, title: str | None, store: SessionStore | None,
                    parent: str | None) -> tuple[str, int]:
    """The new session's id and the messages recorded in it: a summary the recorded agent wrote becomes
    a compaction boundary, not a message, as `nova sessions list` counts them."""
    meta = dict(imported.meta)
    # The model the session ran on: the format's own field, else the one its calls name most often
    # (Claude Code and Codex name it per call only).
    model = str(meta.get("model") or "") or main_model(imported.messages)
    if parent is not None:
        meta["parent_nova_session"] = parent
    session = Session.create(
        home,
        title=title or imported.title or _text(meta.get("title")) or str(meta.get("instance_id") or meta.get("run")
                                                                        or imported.source_path.stem),
        # Where the recorded session ran, when its format says; else unknown (""), never the folder the
        # file was found in, which a resume or the context view would take for the project.
        cwd=imported.working_directory,
        provider=f"import:{imported.format}",
        model=model,
        store=store,
        # A sub-agent's session is linked as Nova links its own: `nova sessions show PARENT` lists it, and
        # a picker of the project's sessions leaves it out.
        parent_id=parent or "",
    )
    with session:
        session.record_event(
            IMPORTED_EVENT,
            {"format": imported.format, "source_path": str(imported.source_path), "meta": meta},
        )
        if imported.system:
            session.record_event(SYSTEM_PROMPT_EVENT, {"text": imported.system})
        if imported.tools:
            session.record_event(TOOLS_EVENT, tools_event_data(imported.tools))
        unmeasured = 0
        for index, message in enumerate(imported.messages):
            compaction = message.metadata.get("compaction")
            summary = next((p for p in message.parts if isinstance(p, SummaryPart)), None)
            if isinstance(compaction, dict) and summary is not None:
                # The recorded agent compacted here: a Nova boundary, so a resume starts from its summary.
                before, after = _context_around(imported.messages, index)
                session.record_compact_boundary(BoundaryRecord(
                    id="", summary=summary.text, trigger=str(compaction.get("trigger") or "imported"),
                    tokens_before=int(compaction.get("tokens_before") or 0) or before, tokens_after=after,
                    covers=summary.covers, messages=(message,), ts=message.created_at))
                continue
            usage = usage_of(message)
            session.record_message(message, usage)
            if message.role == "assistant" and not is_model_reply(message):
                continue  # the recording agent's harness wrote this reply (an API error notice): no call
            if usage is not None:
                session.add_cost(usage, _call_cost(message, usage, model))
            elif message.role == "assistant":
                unmeasured += 1
        # A response the format recorded no usage for (a Codex rollout without token counts) was still a
        # call: its cost is unknown, not $0.
        session.add_unmeasured_calls(unmeasured)
        # Records may come out of order; a message the format gave no time is 0 (see `readers.common`).
        recorded_times = [m.created_at for m in imported.messages if m.created_at > 0]
        if recorded_times:
            session.date_as_recorded(min(recorded_times), max(recorded_times))
    return session.id, session.meta.message_count


def _context_around(messages: Sequence[Message], index: int) -> tuple[int, int]:
    """The context the recorded calls measured on either side of `index` (a compaction): the last one
    before it and the first one after (0 where none was measured). Codex records no size with its
    compaction, and no format the size after it."""
    def context(m: Message) -> int:
        usage = usage_of(m) if m.role == "assistant" else None
        return usage.context_tokens if usage is not None else 0

    before = next((t for m in reversed(messages[:index]) if (t := context(m))), 0)
    after = next((t for m in messages[index + 1:] if (t := context(m))), 0)
    return before, after


def _call_cost(message: Message, usage: Usage, model: str) -> float | None:
    """What the recorded call cost: the price the format recorded (OpenCode, pi), else its usage at the
    list price of the model it names (`model` when it names none), as `nova replay` bills it; None when
    that price is unknown."""
    cost = message.metadata.get("cost_usd")
    if isinstance(cost, int | float):
        return float(cost)
    named = call_model(message, model)
    return cost_usd(usage, named) if named else None


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


@dataclass
class Resumed:
    """A session reopened for another turn: its repaired working history and what to tell the user."""

    session: Session
    history: list[Message]
    notices: list[str] = field(default_factory=list)


def resume(session_id: str, *, home: Path, store: SessionStore | None = None, strict: bool = False) -> Resumed:
    """Open a session for writing and rebuild its working history (SES-4, SES-5). Raises `StorageError`
    with a user-facing message for an unknown id, a missing transcript or a newer meta.json,
    `SessionLocked` when another process is writing it, and with `strict` for any damaged record.
    Otherwise damage is worked around and each thing done is one notice."""
    session = Session.open(home, session_id, store=store, strict=strict)
    try:
        history = session.load_history()
    except BaseException:
        session.close()
        raise
    notices = list(session.notices)
    notices.extend(bad.describe() for bad in session.bad_lines)
    if session.recovered is not None:
        notices.append(session.recovered.describe())
    if session.last_repair is not None and session.last_repair.changed:
        notices.append("repaired the resumed history: " + session.last_repair.describe())
        session.record_event("history_repaired", {"summary": session.last_repair.describe()})
        if (answers := interrupted_answers(history, session.last_repair)) is not None:
            # The process died inside a tool call (kill -9, power loss): the view already answers it;
            # the record must too, or every reader of the transcript (the API, export, the page) shows
            # a call that never returned. Only the trailing case: there the answer belongs at the end.
            session.record_message(answers)
    return Resumed(session=session, history=history, notices=notices)


def latest_session_id(home: Path) -> str | None:
    """The most recently updated session (for `--resume` without an id)."""
    metas, _ = list_sessions(home)
    return metas[0].id if metas else None
