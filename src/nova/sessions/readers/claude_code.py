"""Claude Code session JSONL, as written under `~/.claude/projects/<project>/`.

What the file holds and how it is read:
- leading `file-history-snapshot` and `summary` records (and `progress` / `queue-operation` notes) are not
  conversation: detection looks past them, reading counts them in `meta["ignored_records"]`;
- a `summary` record is a conversation's title, written for the conversation whose last record its
  `leafUuid` names, and often into another session's file: one naming a record of this file's own
  conversation titles the import (the latest such leaf's, as Claude Code's resume picker shows it), the
  others title sessions elsewhere and are left alone;
- one model response is split over several `assistant` records sharing `message.id` (one content block
  each), and when tools run in parallel their results arrive between those records: the response is
  reassembled into one assistant message with all its calls, followed by one user message with their
  results in call order;
- `isMeta` user records (skill bodies, hook feedback, command caveats) are kept, marked `is_meta`, and
  their text parts marked `harness`, as are the harness's records of a local command (`<command-name>`
  with no arguments, `<local-command-stdout>`), a background task's `<task-notification>` and interrupt
  markers: merged with what the person typed, none of them hides it;
- prompts typed while Claude Code was busy are `queue-operation` records: an `enqueue` delivered by
  `remove` (read by the model beside the next tool results) becomes a text of the person's in that
  results message, with the enqueue's own id as its `entry` (a queued `<task-notification>` is not what a
  remove delivers: it comes later as a user record of its own); one delivered by `dequeue` comes back as an
  ordinary user record (imported from there, once; at the next response if it never does); `popAll`
  takes the queue back into the input box unsent (counted in `meta["withdrawn_prompts"]`);
- newer Claude Code writes what it attaches to a request as `attachment` records: a `queued_command`
  (a prompt typed while the tools ran) is read as a delivered queued prompt (once, if a `remove` also
  delivered it), and the text of those whose payload the model reads (`nova.tokens.calibration.
  attachment_text`: a nested CLAUDE.md, an `@`-mentioned file, the reminders) as harness text beside the
  results, or a meta user message; the others are counted in `meta["ignored_records"]`;
- a record whose `parentUuid` names a record written after it (a tool result appended a line before the
  response that called it) is read right after that parent;
- a compaction (`system` `compact_boundary`, then a user record with `isCompactSummary`) becomes a Nova
  summary message (a `SummaryPart` covering everything before it) marked `compaction`, never a request;
- images inside tool results follow the results as image parts;
- each response keeps its real usage (the largest `output_tokens` seen: the field is a streaming count),
  one of thinking only too: it becomes an empty assistant turn (thinking is never imported, SES-3), so
  the call is counted and billed;
- sidechain records (a sub-agent's conversation, inline in older files) become child sessions linked to
  the `Task` call that started them; a sub-agent file (`agent-*.jsonl`, all sidechain) is read as that
  sub-agent's own session, linked to its parent session, and a session whose Task result names an
  `agentId` takes that agent's file (beside it or under `<sessionId>/subagents/`) as a child;
- Claude Code 2.1 runs each compaction's summary call as an agent of its own, written to
  `<sessionId>/subagents/agent-acompact-<id>.jsonl` with no Task call naming it: the session takes those
  files as children too, marked `compaction_run` (the summary calls, billed apart from the session's).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from nova.errors import NotASessionFile
from nova.messages import Message, Part, SummaryPart, TextPart, ToolResultPart, ToolUsePart
from nova.model import SYNTHETIC_REPLY, Usage
from nova.sessions.readers.base import Confidence, ImportedSession, NotJson, SkippedRecord, refuse, sure
from nova.sessions.readers.common import Builder, anthropic_parts, iso_ts, json_lines, load_text, mid, text_of
from nova.tokens.calibration import attachment_text

NAME = "claude-code"
_CONVERSATION = ("user", "assistant", "system")
_NOT_CONVERSATION = ("file-history-snapshot", "summary", "progress", "queue-operation")
_SUBAGENT_TOOLS = ("Task", "Agent")
_META_KEYS = ("sessionId", "cwd", "gitBranch", "version")


class ClaudeCodeReader:
    name = NAME

    def confidence(self, path: Path, head_records: Sequence[Any]) -> Confidence:
        preamble = 0
        for number, record in enumerate(head_records, 1):
            if isinstance(record, NotJson):
                return refuse(f"line {record.line}: not JSON ({record.error})")
            if not isinstance(record, dict):
                return refuse(f"record {number}: not a JSON object")
            kind = record.get("type")
            if kind in _NOT_CONVERSATION:
                preamble += 1
                continue
            if kind in _CONVERSATION and ("sessionId" in record or "uuid" in record
                                          or isinstance(record.get("message"), dict)):
                return sure(0.95)
            if kind in _CONVERSATION:
                return refuse(f"record {number}: `type` {kind!r} without `sessionId`, `uuid` or `message`")
            if "sessionId" in record:
                preamble += 1  # a record kind this reader does not know yet, from a newer Claude Code
                continue
            return refuse(f"record {number}: `type` is {kind!r}, expected user/assistant/system "
                          f"(after any file-history-snapshot/summary records)")
        if preamble:
            return sure(0.3, "only file-history-snapshot/summary records in the first lines")
        return refuse("no records")

    def read(self, path: Path, *, strict: bool = False) -> ImportedSession:
        skipped: list[SkippedRecord] = []
        records = list(json_lines(load_text(path), skipped))
        meta: dict[str, Any] = {}
        for _, record in records:
            for key in _META_KEYS:
                if key in record and key not in meta:
                    meta[key] = record[key]
        main = [(n, r) for n, r in records if not r.get("isSidechain")]
        side = [(n, r) for n, r in records if r.get("isSidechain")]
        conversation = [(n, r) for n, r in main if r.get("type") in _CONVERSATION]
        if not conversation and side:
            # A sub-agent's own file: its conversation is the sidechain, its parent the session it names.
            chain = _assemble(side)
            first = side[0][1]
            meta.update(sidechain=True, parent_session=first.get("sessionId"),
                        agent_id=first.get("agentId"), ignored_records=dict(chain.ignored),
                        source_counts=chain.counts.to_dict())
            if is_compaction_run(meta):
                meta["compaction_run"] = True
            _require_messages(chain.builder.messages, path, chain.ignored)
            return ImportedSession(messages=chain.builder.messages, system="", format=NAME, source_path=path,
                                   meta=meta, skipped=tuple(skipped + chain.skipped))
        assembled = _assemble(main)
        messages = assembled.builder.messages
        title = _title(records, main)
        children = tuple(_children(side, messages, path, meta)) + tuple(_agent_files(main, path, meta))
        if not messages and not children:
            _require_messages(messages, path, assembled.ignored)
        meta["ignored_records"] = dict(assembled.ignored)
        meta["source_counts"] = assembled.counts.to_dict()
        if assembled.withdrawn:
            meta["withdrawn_prompts"] = assembled.withdrawn
        return ImportedSession(messages=messages, system="", format=NAME, source_path=path, meta=meta,
                               skipped=tuple(skipped + assembled.skipped), children=children, title=title)


def _title(records: Sequence[tuple[int, dict[str, Any]]], conversation: Sequence[tuple[int, dict[str, Any]]]) -> str:
    """The title of this file's conversation: the `summary` whose `leafUuid` is the latest of its records
    (the last written, for one leaf); "" when none names one of them."""
    lines = {str(r["uuid"]): n for n, r in conversation if r.get("uuid") and r.get("type") != "summary"}
    titled = [(lines[leaf], n, text.strip()) for n, r in records
              if r.get("type") == "summary" and isinstance(text := r.get("summary"), str) and text.strip()
              and (leaf := str(r.get("leafUuid") or "")) in lines]
    return max(titled)[2] if titled else ""


def _require_messages(messages: list[Message], path: Path, ignored: Counter[str]) -> None:
    if not messages:
        kinds = ", ".join(f"{n} {k}" for k, n in ignored.most_common()) or "nothing"
        # Claude Code writes such files (session titles only, file snapshots): nothing to import.
        raise NotASessionFile(f"{path}: a Claude Code file with no conversation in it ({kinds})")


@dataclass(slots=True)
class _Counts:
    """What the source holds, to compare with what was imported."""

    responses: set[str] = field(default_factory=set)
    synthetic: set[str] = field(default_factory=set)
    """Replies Claude Code wrote itself: in the file, but no model's response (a replay counts none)."""
    tool_calls: set[str] = field(default_factory=set)
    tool_results: int = 0

    def to_dict(self) -> dict[str, int]:
        return {"responses": len(self.responses - self.synthetic), "tool_calls": len(self.tool_calls),
                "tool_results": self.tool_results}


@dataclass(slots=True)
class _Response:
    """One model response being reassembled from the records sharing its `message.id`."""

    id: str
    line: int
    ts: float | None
    parts: list[Part] = field(default_factory=list)
    usage: dict[str, Any] | None = None
    model: str = ""
    synthetic: bool = False
    """Claude Code wrote this reply itself (model `<synthetic>`: "API Error: ...", "No response
    requested."): no model answered, and nothing was billed."""
    results: list[ToolResultPart] = field(default_factory=list)
    after_results: list[Part] = field(default_factory=list)
    results_line: int = 0
    results_ts: float | None = None

    def call_ids(self) -> list[str]:
        return [p.id for p in self.parts if isinstance(p, ToolUsePart)]


@dataclass(slots=True)
class _Assembly:
    builder: Builder = field(default_factory=Builder)
    open: _Response | None = None
    boundary: dict[str, Any] | None = None
    covered_upto: int = 0
    ignored: Counter[str] = field(default_factory=Counter)
    skipped: list[SkippedRecord] = field(default_factory=list)
    counts: _Counts = field(default_factory=_Counts)
    queued: list[tuple[int, str]] = field(default_factory=list)
    """Prompts typed while the agent was busy, not delivered yet: (enqueue line, text)."""
    dequeued: list[tuple[int, str]] = field(default_factory=list)
    """Prompts sent as a user record of their own, expected next."""
    withdrawn: int = 0

    def deliver_dequeued(self) -> None:
        """A dequeued prompt whose user record never came: imported where the model got it, before the next
        response."""
        for line, text in self.dequeued:
            self.builder.add("user", [TextPart(text)], line, None, {"queued": True})
        self.dequeued = []

    def close(self) -> None:
        response, self.open = self.open, None
        if response is None:
            return
        b = self.builder
        # A response of thinking only (the person interrupted it, or the model stopped before a word) was
        # still a billed call: kept as an empty assistant turn with its usage, which the resume repair
        # drops from the view and a replay counts as a call that added nothing to the history.
        if response.parts or response.usage is not None:
            metadata: dict[str, Any] = {}
            if response.usage is not None:
                metadata["usage"] = Usage.from_dict(response.usage).to_dict()
            if response.model:
                metadata["model"] = response.model
            if response.synthetic and not response.model:
                metadata[SYNTHETIC_REPLY] = True
                self.counts.synthetic.add(response.id)
            b.add("assistant", response.parts or [TextPart("")], response.line, response.ts, metadata)
        if response.results or response.after_results:
            order = {call_id: i for i, call_id in enumerate(response.call_ids())}
            results = sorted(response.results, key=lambda r: order.get(r.tool_use_id, len(order)))
            b.add("user", [*results, *response.after_results], response.results_line, response.results_ts)


def _parents_first(records: Sequence[tuple[int, dict[str, Any]]]) -> list[tuple[int, dict[str, Any]]]:
    """The records with each one whose `parentUuid` is written later in the file moved to just after that
    parent: Claude Code 2.1 sometimes writes a tool's result a line before the response that called it
    (the two are appended concurrently), and read in file order the result answered no call."""
    position = {r["uuid"]: i for i, (_, r) in enumerate(records) if isinstance(r.get("uuid"), str)}
    waiting: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    ordered: list[tuple[int, dict[str, Any]]] = []
    seen: set[str] = set()
    for i, item in enumerate(records):
        parent = item[1].get("parentUuid")
        if isinstance(parent, str) and parent not in seen and position.get(parent, -1) > i:
            waiting.setdefault(parent, []).append(item)
            continue
        ready = [item]
        while ready:
            ordered.append(current := ready.pop(0))
            uuid = current[1].get("uuid")
            if isinstance(uuid, str):
                seen.add(uuid)
                ready[:0] = waiting.pop(uuid, [])
    return ordered


def _assemble(records: Sequence[tuple[int, dict[str, Any]]]) -> _Assembly:
    a = _Assembly()
    for number, record in _parents_first(records):
        kind = record.get("type")
        try:
            if kind == "assistant":
                a.deliver_dequeued()
                _assistant(a, number, record)
            elif kind == "user":
                _user(a, number, record)
            elif kind == "queue-operation":
                _queue(a, number, record)
            elif kind == "attachment":
                _attachment(a, number, record)
            elif kind == "system" and record.get("subtype") == "compact_boundary":
                a.close()
                meta = record.get("compactMetadata") or {}
                a.boundary = {"trigger": meta.get("trigger", ""), "tokens_before": meta.get("preTokens", 0)}
            else:
                label = f"system:{record.get('subtype')}" if kind == "system" else str(kind)
                a.ignored[label] += 1
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            a.skipped.append(SkippedRecord(f"line {number}", f"{kind} record could not be read: {exc!r}"))
    a.close()
    a.deliver_dequeued()
    return a


def _queue(a: _Assembly, number: int, record: dict[str, Any]) -> None:
    operation = record.get("operation")
    if operation == "enqueue" and isinstance(record.get("content"), str) and record["content"].strip():
        a.queued.append((number, record["content"]))
    elif operation == "remove" and a.queued:
        # Delivered while tools ran: the model read it beside the results of the calls now running. A
        # background task's `<task-notification>` waits in the same queue but is not what a remove
        # delivers: it comes later as a user record of its own, so the person's prompt behind it is.
        typed_first = [i for i, (_, queued) in enumerate(a.queued) if not queued.startswith(_TASK_NOTIFICATION)]
        line, text = a.queued.pop(typed_first[0] if typed_first else 0)
        _beside_results(a, _queued_part(text, entry=mid(line)), _queued_part(text), line,
                        iso_ts(record.get("timestamp")), {"queued": True})
    elif operation == "dequeue" and a.queued:
        a.dequeued.append(a.queued.pop(0))
    elif operation == "popAll":
        a.withdrawn += len(a.queued)
        a.queued = []
    else:
        a.ignored[f"queue-operation:{operation}"] += 1


def _queued_part(text: str, *, entry: str = "") -> TextPart:
    """A queued prompt as the model read it: the person's words, unless the queue held the harness's own
    note (a background task's `<task-notification>`, queued as `commandMode: task-notification`)."""
    if _harness_text(text):
        return TextPart(text, harness=True)
    return TextPart(text, entry=entry)


def _beside_results(a: _Assembly, beside: TextPart, alone: TextPart, number: int, ts: float | None,
                    metadata: dict[str, Any]) -> None:
    """A text where the model read it: `beside` the results of the calls now running, else `alone` as a
    user message of its own."""
    if a.open is not None and a.open.call_ids():
        a.open.after_results.append(beside)
    else:
        a.close()
        a.builder.add("user", [alone], number, ts, metadata)


def _attachment(a: _Assembly, number: int, record: dict[str, Any]) -> None:
    attachment = record.get("attachment")
    kind = attachment.get("type") if isinstance(attachment, dict) else None
    ts = iso_ts(record.get("timestamp"))
    if kind == "queued_command" and isinstance(attachment, dict):
        prompt = attachment.get("prompt")
        text = prompt if isinstance(prompt, str) else text_of(prompt)
        delivered = a.open.after_results if a.open is not None else []
        if not text.strip() or any(isinstance(p, TextPart) and p.text == text for p in delivered):
            return  # nothing typed, or the `remove` of its enqueue already delivered it
        a.queued = [(line, queued) for line, queued in a.queued if queued != text]
        a.dequeued = [(line, queued) for line, queued in a.dequeued if queued != text]
        _beside_results(a, _queued_part(text, entry=mid(number)), _queued_part(text), number, ts, {"queued": True})
        return
    text = attachment_text(attachment)
    if not text:
        a.ignored[f"attachment:{kind}"] += 1
        return
    part = TextPart(text, harness=True)
    _beside_results(a, part, part, number, ts, {"is_meta": True})


_TASK_NOTIFICATION = "<task-notification>"
_INTERRUPTED = "[Request interrupted by user"
_LOCAL_OUTPUT = ("<local-command-stdout>", "<local-command-stderr>", "<bash-stdout>", "<bash-stderr>")
_CAVEAT = "Caveat: The messages below were generated by the user while running local commands"
_COMMAND_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.S)
_COMMAND_NAME = re.compile(r"<command-name>(.*?)</command-name>", re.S)
# Claude Code's built-in commands that run locally and ask the model nothing: their record is the
# harness's. A custom command (a prompt file) and any command given arguments is the person's request.
LOCAL_COMMANDS = frozenset((
    "clear", "compact", "model", "config", "cost", "help", "exit", "quit", "login", "logout", "status",
    "resume", "memory", "permissions", "hooks", "mcp", "agents", "context", "doctor", "export", "vim",
    "theme", "terminal-setup", "ide", "add-dir", "bashes", "release-notes", "upgrade", "usage", "todos",
    "rewind", "statusline", "privacy-settings", "output-style", "plugin", "stats", "sandbox",
))


def _harness_text(text: str) -> bool:
    """Text Claude Code wrote into a user record, not the person: an interrupt marker, a local command's
    output or caveat, a background task's `<task-notification>`, the record of a built-in local command
    run with no arguments."""
    stripped = text.strip()
    if stripped.startswith((_INTERRUPTED, _CAVEAT, _TASK_NOTIFICATION, *_LOCAL_OUTPUT)):
        return True
    if stripped.startswith(("<command-name>", "<command-message>")):
        args = _COMMAND_ARGS.search(stripped)
        name = _COMMAND_NAME.search(stripped)
        local = name is not None and name.group(1).strip().lstrip("/") in LOCAL_COMMANDS
        return local and not (args and args.group(1).strip())
    return False


def _marked(parts: list[Part], *, meta: bool) -> list[Part]:
    return [TextPart(p.text, harness=True) if isinstance(p, TextPart) and (meta or _harness_text(p.text)) else p
            for p in parts]


def _assistant(a: _Assembly, number: int, record: dict[str, Any]) -> None:
    message = record["message"]
    response_id = str(message.get("id") or f"line-{number}")
    content = message.get("content")
    a.counts.responses.add(response_id)
    for block in content if isinstance(content, list) else ():
        if isinstance(block, dict) and block.get("type") == "tool_use":
            a.counts.tool_calls.add(str(block.get("id")))
    parts = anthropic_parts(content)
    if a.open is None or a.open.id != response_id:
        a.close()
        a.open = _Response(id=response_id, line=number, ts=iso_ts(record.get("timestamp")))
    response = a.open
    response.parts.extend(parts)
    usage = message.get("usage")
    # `"usage": {}` (a record some tools append by hand) counts nothing: read as a call of 0 tokens, it
    # made the session's context 0 at its end.
    if isinstance(usage, dict) and _counts_tokens(usage) and (response.usage is None
                                    or int(usage.get("output_tokens") or 0) >= int(response.usage.get("output_tokens") or 0)):
        response.usage = usage
    if message.get("model") == "<synthetic>":
        response.synthetic = True
    elif message.get("model"):
        response.model = str(message["model"])


def _user(a: _Assembly, number: int, record: dict[str, Any]) -> None:
    message = record.get("message") or {}
    content = message.get("content")
    ts = iso_ts(record.get("timestamp"))
    if record.get("isCompactSummary"):
        a.close()
        b = a.builder
        covers = tuple(m.id for m in b.messages[a.covered_upto:])
        compaction = {"source": "claude-code", **(a.boundary or {})}
        b.add("user", [SummaryPart(text_of(content), covers=covers)], number, ts, {"compaction": compaction})
        a.covered_upto = len(b.messages)
        a.boundary = None
        return
    parts = _marked(anthropic_parts(content, with_result_images=True), meta=bool(record.get("isMeta")))
    typed = [p.text.strip() for p in parts if isinstance(p, TextPart) and not p.harness]
    a.dequeued = [(line, text) for line, text in a.dequeued if text.strip() not in typed]
    results = [p for p in parts if isinstance(p, ToolResultPart)]
    a.counts.tool_results += len(results)
    others = [p for p in parts if not isinstance(p, ToolResultPart)]
    response = a.open
    if results and response is not None and set(response.call_ids()) & {r.tool_use_id for r in results}:
        # A result of the response still being assembled: its other calls may follow.
        if not response.results_line:
            response.results_line, response.results_ts = number, ts
        response.results.extend(results)
        response.after_results.extend(others)
        return
    a.close()
    if not parts:
        return
    metadata = {"is_meta": True} if record.get("isMeta") else {}
    if results and not others:
        a.builder.add_results(results, number, ts)
    else:
        a.builder.add("user", [*results, *others], number, ts, metadata)


def _agent_files(main: Sequence[tuple[int, dict[str, Any]]], path: Path,
                 meta: dict[str, Any]) -> list[ImportedSession]:
    """Sub-agents that Claude Code wrote to their own file (`agent-<agentId>.jsonl`, beside the session or
    under `<sessionId>/subagents/`), found through the `agentId` of the Task result that ended them."""
    found = []
    for _, record in main:
        result = record.get("toolUseResult")
        agent_id = result.get("agentId") if isinstance(result, dict) else None
        if not isinstance(agent_id, str) or not agent_id.replace("-", "").isalnum():
            continue
        content = (record.get("message") or {}).get("content")
        call_id = next((b.get("tool_use_id") for b in content if isinstance(b, dict) and b.get("type") == "tool_result"),
                       None) if isinstance(content, list) else None
        for candidate in (path.parent / f"agent-{agent_id}.jsonl",
                          path.parent / str(meta.get("sessionId", "")) / "subagents" / f"agent-{agent_id}.jsonl"):
            if candidate.is_file() and candidate != path:
                child = ClaudeCodeReader().read(candidate)
                found.append(replace(child, meta={**child.meta, "parent_tool_use_id": call_id,
                                                  "parent_session": meta.get("sessionId")}))
                break
    folder = path.parent / str(meta.get("sessionId", "")) / "subagents"
    if meta.get("sessionId") and folder.is_dir():
        for candidate in sorted(folder.glob(f"agent-{COMPACTION_AGENT_PREFIX}*.jsonl")):
            if candidate != path:  # read as a sub-agent's own file, it names this session as its parent
                found.append(ClaudeCodeReader().read(candidate))
    return found


COMPACTION_AGENT_PREFIX = "acompact-"
"""The `agentId` prefix of the agent Claude Code runs a compaction's summary call as."""


def is_compaction_run(meta: Mapping[str, Any]) -> bool:
    """Whether an imported Claude Code file is a compaction's summary call (see the module text)."""
    return str(meta.get("agent_id") or "").startswith(COMPACTION_AGENT_PREFIX)


def _children(side: Sequence[tuple[int, dict[str, Any]]], parent: list[Message], path: Path,
              meta: dict[str, Any]) -> list[ImportedSession]:
    """Each sidechain (grouped by its root record, or its `agentId`) as a child session, linked to the
    `Task` call whose prompt started it."""
    if not side:
        return []
    roots: dict[str, str] = {}
    groups: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for number, record in side:
        uuid = str(record.get("uuid") or f"line-{number}")
        parent_uuid = record.get("parentUuid")
        root = str(record.get("agentId") or roots.get(str(parent_uuid), uuid))
        roots[uuid] = root
        groups.setdefault(root, []).append((number, record))
    prompts = {str(p.input.get("prompt", "")).strip(): p.id for m in parent for p in m.tool_uses()
               if p.name in _SUBAGENT_TOOLS and isinstance(p.input.get("prompt"), str)}
    children = []
    for root, chain_records in groups.items():
        chain = _assemble(chain_records)
        messages = chain.builder.messages
        if not messages:
            continue
        first_text = next((p.text for p in messages[0].parts if isinstance(p, TextPart)), "").strip()
        children.append(ImportedSession(
            messages=messages, system="", format=NAME, source_path=path,
            meta={**meta, "sidechain": True, "parent_session": meta.get("sessionId"), "sidechain_root": root,
                  "parent_tool_use_id": prompts.get(first_text), "source_counts": chain.counts.to_dict()},
            skipped=tuple(chain.skipped)))
    return children


def _counts_tokens(usage: dict[str, Any]) -> bool:
    counted = Usage.from_dict(usage)
    return counted.context_tokens + counted.output_tokens > 0
