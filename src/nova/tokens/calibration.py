"""Fitting and scoring a token profile on recorded sessions that carry the provider's real usage.

Between two consecutive calls of one conversation the real input grows by exactly what was appended:
the previous reply and what came back (tool results, user messages). So each pair of calls is one
`GrowthStep`, and a profile is judged by how well it counts those appended messages against the real
difference, never by anything of the call it would predict.

What the Claude Code sessions show (5 files, 17 steps; numbers in cl100k tokens of the recorded text):
the real growth of a step is the reply's own output tokens, plus the tool result, plus 86-192 tokens
that nothing in the transcript accounts for. That remainder is per step, not per token: a Bash step whose
recorded call and empty result are 42 tokens grows by 291, a Read step of 179 tokens by 422. It is the
same within a session and differs between sessions: ~190 a step in crud.jsonl while its todo list is
open, ~123 in todos.jsonl, 94 in both once the list is cleared, ~20 in the one Opus step of the newer
Claude Code in images.jsonl. That is what Claude Code sends without recording it (its system reminders,
presumably: their text is not in the transcript, so the cause cannot be read off it). A Claude session
driven by a harness that adds nothing (the pi sessions beside them, Opus 4.5) grows by the output tokens
plus the result plus ~20. So the fit keeps two things apart:

- the tokenizer: Claude's count as exact cl100k times a scale (`nova.tokens.for_model.claude_counter`),
  with the tokens a tool call costs beyond its name and arguments (from the complete replies' output
  tokens, which no harness inflates: `fit_claude_tokenizer`). That is the shipped counter, because it
  is what Claude counts for any harness, Nova included.
- the harness allowance: a per-step constant fitted beside the scale (`fit_claude`), scored with the
  counter on held-out sessions to say how well a growth step is predicted for Claude Code. It belongs
  to Claude Code, not to Claude, and is not in the counter Nova ships.

The scale and the constant are fitted together on the growth steps and the replies, as the anchored
error weighs them (|miss| ÷ the call's real input), so the large steps of code and tool output fix the
scale and the small ones the constant. A scale fitted on the replies alone rested on a few replies of
prose (x1.00 from 4 replies on one half of the shared files, where that half's steps say x1.09). A
single scale on every token with no constant (x1.99 with +30 per tool part, once) absorbs the
remainder only on steps of the size it was fitted on and counts a large tool result 1.55x too high.
Because the remainder is a per-session constant, a per-step allowance fitted on one half of the sessions
misses the other half by about a fifth (the benchmark prints it per session);
what each session learns from its own answered calls does not, and that is what Nova's ledger does
(`nova.tokens.allowance`; `score_ledger` scores it on recorded steps).

Claude Code sessions (JSONL) are read here because they are the recorded Claude sessions with usage we
have. Their records are not a clean list: one record per content block of a response (all with the same
`message.id` and the same usage), records out of file order (they link by `parentUuid`), sub-agent
branches (`isSidechain`) and compaction boundaries (a new chain whose `logicalParentUuid` points back).
Newer Claude Code writes what it attaches to a request as `attachment` records in the chain (a nested
CLAUDE.md, an `@`-mentioned file, a prompt typed while the tools ran): their text is part of the step.
The files here predate them, which is why a nested CLAUDE.md or a mentioned file is missing from them.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

from nova.messages import ImagePart, Message, Part, TextPart, ThinkingPart, ToolResultPart, ToolUsePart
from nova.model import Usage
from nova.tokens.counters import Overheads, ScaledCounter, TokenCounter
from nova.tokens.for_model import claude_counter, counter_for_model
from nova.tokens.ledger import TokenLedger, thinking_kept, turn_drops_reasoning
from nova.tokens.sizing import count_message

__all__ = [
    "ClaudeFit",
    "GrowthScore",
    "GrowthStep",
    "attachment_text",
    "claude_code_steps",
    "fit_claude",
    "fit_claude_tokenizer",
    "mentioned_files",
    "pi_steps",
    "replayed_reasoning",
    "score_growth",
    "score_ledger",
    "thinking_kept",
]


@dataclass(frozen=True, slots=True)
class GrowthStep:
    """Call k of a conversation against call k-1: `added` is call k-1's reply and what came back."""

    source: str
    model: str
    previous_real: int
    real: int
    added: tuple[Message, ...]
    # The previous reply as the model generated it (thinking included, whether or not it is input
    # again) and its output tokens as recorded (0 when none was; may be a partial streaming count).
    generated: tuple[Part, ...] = ()
    output_tokens: int = 0
    # Tokens of the previous reply's reasoning that call k was sent but no part of `added` holds (the
    # record keeps a summary of it, or nothing): see `replayed_reasoning`.
    reasoning: int = 0
    # Call k-1's reply ended its turn, or what came back after it opened a new one
    # (`nova.tokens.turn_drops_reasoning`): call k no longer holds the reasoning the turn's replies sent back.
    ends_turn: bool = False
    # Files the harness put into call k's request that no record holds (`mentioned_files`): its input
    # cannot be known from the records, so the step is no measure of an estimate.
    unrecorded: tuple[str, ...] = ()

    @property
    def growth(self) -> int:
        return self.real - self.previous_real


@dataclass(frozen=True, slots=True)
class GrowthScore:
    """`ratios`: real growth ÷ estimated growth per step. `anchored_errors_pct`: |real(k-1) + estimated
    growth - real(k)| in percent of real(k), what the ledger's anchored figure would have been off by."""

    ratios: tuple[float, ...]
    anchored_errors_pct: tuple[float, ...]


def _real_input(usage: Mapping[str, Any]) -> int:
    return sum(int(usage.get(key) or 0) for key in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"))


def _result_parts(block: Mapping[str, Any]) -> list[Part]:
    content = block.get("content")
    texts: list[str] = []
    images: list[Part] = []
    if isinstance(content, str):
        texts.append(content)
    for item in content if isinstance(content, list) else ():
        if item.get("type") == "text":
            texts.append(str(item.get("text", "")))
        elif item.get("type") == "image":
            source = item.get("source") or {}
            images.append(ImagePart(media_type=str(source.get("media_type", "")), data=str(source.get("data", ""))))
    result = ToolResultPart(str(block.get("tool_use_id", "")), "\n".join(texts), is_error=bool(block.get("is_error")))
    return [result, *images]


def _ends_turn(generated: Sequence[Part], model: str, after: Sequence[Message] = ()) -> bool:
    """Whether the request after a recorded reply (its parts as generated; `after`: what came back) no
    longer holds its turn's reasoning, as the live ledger decides it."""
    return turn_drops_reasoning(Message(role="assistant", parts=tuple(generated)), model, after)


def replayed_reasoning(reply: Sequence[Part], generated: Sequence[Part], output_tokens: int, model: str,
                       counter: TokenCounter, after: Sequence[Message] = ()) -> int:
    """Tokens of a recorded Claude reply's thinking that the next request carries beyond what `reply` (its
    parts as they go back) holds. Thinking goes back while the reply calls tools (its turn goes on) or
    when the model keeps it (`thinking_kept`), as `nova.tokens.reasoning_goes_back` decides for a live
    reply; Claude 4 models record only a summary of it and bill the whole. So when the recorded output
    count covers everything generated, the thinking is that count less what the reply as sent counts;
    a partial streaming count (Claude Code often records 1 or 8) says nothing, and the recorded summary,
    where it is not already part of `reply`, is the lower bound used. `after`: what came back after the
    reply; when it opens a new turn (`nova.tokens.opens_turn`) the thinking is dropped as at a turn's end."""
    thinking = [p for p in generated if isinstance(p, ThinkingPart)]
    if not thinking or _ends_turn(generated, model, after):
        return 0
    sent = count_message(Message(role="assistant", parts=tuple(reply)), counter) if reply else 0
    summary = 0 if any(isinstance(p, ThinkingPart) for p in reply) else \
        sum(counter.count(p.thinking) for p in thinking)
    if output_tokens >= sent + summary:
        return output_tokens - sent
    return summary


# `@path` in a prompt: Claude Code reads the file and sends its content with the prompt, and records only
# the prompt. A path has a slash or an extension, which `@property` or `@dataclass` in pasted code and a
# mail address (no space before the @) have not.
_MENTION = re.compile(r"(?:^|(?<=\s))@([\w.~-]*[/.][\w./~-]*\w)")


def mentioned_files(message: Message | None) -> tuple[str, ...]:
    """The files a Claude Code user message `@`-mentions in its own text (not in tool results): Claude
    Code attaches each one's content to the request and records none of it. Measured: the one recorded
    step whose prompt mentioned a file (a skill body's `@_bmad/core/workflows/party-mode/workflow.md`,
    session-3fe1b6bc) grew by 2,353 tokens beyond what its records hold."""
    if message is None or message.role != "user":
        return ()
    return tuple(path for part in message.parts if isinstance(part, TextPart) for path in _MENTION.findall(part.text))


def _unattached(call: _Call) -> tuple[str, ...]:
    """The files the prompts after `call` mention that no attachment record holds (older Claude Code
    records none)."""
    return tuple(m for m in call.mentioned if not any(a.endswith(m.lstrip("./")) for a in call.attached if a))


def _parts(content: Any, *, thinking: bool = False) -> list[Part]:
    """A Claude Code (Anthropic Messages) content list as parts."""
    return _content_parts(content, thinking=thinking, call_type="tool_use", arguments_key="input",
                          image_type=lambda block: (block.get("source") or {}).get("media_type", ""),
                          results=True)


def _content_parts(content: Any, *, thinking: bool, call_type: str, arguments_key: str,
                   image_type: Callable[[Mapping[str, Any]], Any], results: bool) -> list[Part]:
    """A recorded content list (a string, or typed blocks) as parts. The formats differ only in the
    tool-call block's type and arguments key, where an image names its media type, and whether tool
    results ride in the same list."""
    if isinstance(content, str):
        return [TextPart(content)] if content else []
    parts: list[Part] = []
    for block in content if isinstance(content, list) else ():
        kind = block.get("type")
        if kind == "text" and block.get("text"):
            parts.append(TextPart(str(block["text"])))
        elif kind == call_type:
            parts.append(ToolUsePart(str(block.get("id", "")), str(block.get("name", "")),
                                     block.get(arguments_key) or {}))
        elif kind == "tool_result" and results:
            parts.extend(_result_parts(block))
        elif kind == "image":
            parts.append(ImagePart(media_type=str(image_type(block))))
        elif kind == "thinking" and thinking and block.get("thinking"):
            parts.append(ThinkingPart(str(block["thinking"])))
    return parts


def _records(path: Path) -> dict[str, dict[str, Any]]:
    """Conversation records by uuid; a record written twice is kept once. `attachment` records (newer
    Claude Code) are links of the chain like the others, and some hold what a request carried."""
    return _records_by(path, "uuid", lambda record: record.get("type") in ("user", "assistant", "system", "attachment"))


# Claude Code's attachment records whose payload goes to the model, rendered into a system reminder
# beside the next request's tool results: a directory's CLAUDE.md loaded when a file under it is read,
# an `@`-mentioned file, a prompt typed while the tools ran, the to-do and task reminders, a note that a
# file changed on disk, the skill list, plan mode, the tokens left. The rest (hook bookkeeping, tool-list
# deltas) are not read: what they add, if anything, is not known.
_SENT_ATTACHMENTS = frozenset((
    "nested_memory", "file", "queued_command", "todo_reminder", "task_reminder", "edited_text_file",
    "skill_listing", "plan_mode", "total_tokens_reminder",
))
# Keys of an attachment that name or describe its payload rather than hold it.
_ATTACHMENT_META = frozenset((
    "type", "path", "filename", "displayPath", "filePath", "uuid", "toolUseID", "timestamp", "numLines",
    "startLine", "totalLines", "contentDiffersFromDisk", "isMeta",
))


def attachment_text(attachment: Any) -> str:
    """The text an attachment record puts into the request (its payload's strings, with the file it
    names), or "" for one whose payload is not sent (`_SENT_ATTACHMENTS`)."""
    if not isinstance(attachment, dict) or attachment.get("type") not in _SENT_ATTACHMENTS:
        return ""
    texts: list[str] = []

    def collect(value: Any) -> None:
        if isinstance(value, str):
            texts.append(value)
        elif isinstance(value, dict):
            for key, item in value.items():
                if key not in _ATTACHMENT_META:
                    collect(item)
        elif isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
            texts.append(_json(value))  # a to-do list and the like: sent as its JSON
        elif isinstance(value, list):
            for item in value:
                collect(item)

    collect(attachment)
    named = str(attachment.get("path") or attachment.get("filename") or "")
    body = "\n".join(t for t in texts if t)
    return f"{named}\n{body}" if named and body else body


def _records_by(path: Path, key: str, keep: Callable[[dict[str, Any]], bool] = lambda _: True) -> dict[str, dict[str, Any]]:
    """The JSONL file's object records that have `key` and pass `keep`, by `key`; a line that does not
    parse is skipped, and a record written twice is kept once (the first)."""
    records: dict[str, dict[str, Any]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get(key) and keep(record):
            records.setdefault(str(record[key]), record)
    return records


_BOUNDARY = "boundary"


def _chains(records: Mapping[str, dict[str, Any]]) -> Iterator[list[dict[str, Any] | str]]:
    """Every root-to-leaf path, oldest first; a compaction boundary becomes the marker `_BOUNDARY`."""
    referenced = {r.get("parentUuid") for r in records.values()} | {r.get("logicalParentUuid") for r in records.values()}
    for uuid, leaf in records.items():
        if uuid in referenced:
            continue
        path: list[dict[str, Any] | str] = []
        seen: set[str] = set()
        record: dict[str, Any] | None = leaf
        while record is not None and str(record["uuid"]) not in seen:
            seen.add(str(record["uuid"]))
            path.append(record)
            parent = record.get("parentUuid")
            if parent is None and record.get("logicalParentUuid"):
                path.append(_BOUNDARY)
                parent = record["logicalParentUuid"]
            record = records.get(parent) if parent else None
        path.reverse()
        yield path


@dataclass
class _Call:
    id: str
    model: str
    real: int
    reply: list[Part]  # as it goes back as input
    generated: list[Part]  # as it was generated, thinking included
    output: int
    after: list[list[Part]]  # user records that came back after this call, one list per record
    mentioned: list[str] = field(default_factory=list)  # files its prompts `@`-mention (`mentioned_files`)
    attached: list[str] = field(default_factory=list)  # files attachment records hold


def _calls(path: Sequence[dict[str, Any] | str]) -> Iterator[list[_Call]]:
    """The calls of one path, grouped into runs that no compaction boundary separates."""
    run: list[_Call] = []
    by_id: dict[str, _Call] = {}
    for record in path:
        if record == _BOUNDARY or (isinstance(record, dict) and record.get("subtype") == "compact_boundary"):
            if run:
                yield run
            run, by_id = [], {}
            continue
        assert isinstance(record, dict)
        message = record.get("message") or {}
        if record["type"] == "assistant" and isinstance(message, dict) and message.get("usage"):
            call_id = str(message.get("id") or record["uuid"])
            call = by_id.get(call_id)
            if call is None:  # the first record of a response; the others add their content block
                call = by_id[call_id] = _Call(call_id, str(message.get("model", "")), 0, [], [], 0, [])
                run.append(call)
            call.real = max(call.real, _real_input(message["usage"]))
            call.output = max(call.output, int(message["usage"].get("output_tokens") or 0))
            call.reply.extend(_parts(message.get("content"), thinking=thinking_kept(call.model)))
            call.generated.extend(_parts(message.get("content"), thinking=True))
        elif record["type"] == "user" and run and isinstance(message, dict):
            parts = _parts(message.get("content"))
            if record.get("isMeta"):  # a skill body, a caveat: Claude Code's text, not the person's
                parts = [TextPart(p.text, harness=True) if isinstance(p, TextPart) else p for p in parts]
            if parts:
                run[-1].after.append(parts)
                run[-1].mentioned += mentioned_files(Message(role="user", parts=tuple(parts)))
        elif record["type"] == "attachment" and run:
            attachment = record.get("attachment")
            if text := attachment_text(attachment):  # Claude Code's reminder, beside the results
                run[-1].after.append([TextPart(text, harness=True)])
                if isinstance(attachment, dict) and attachment.get("type") == "file":
                    run[-1].attached.append(str(attachment.get("filename") or attachment.get("path") or ""))
    if run:
        yield run


def _user_message(records: Iterable[list[Part]]) -> Message | None:
    # Consecutive user records (the results of parallel tool calls) reach the API as one user message.
    parts = [part for record in records for part in record]
    return Message(role="user", parts=tuple(parts)) if parts else None


def _results_by_call(records: Mapping[str, dict[str, Any]]) -> dict[str, list[Part]]:
    """Every tool result of the file by the call it answers (its parts: the result, then its images)."""
    found: dict[str, list[Part]] = {}
    for record in records.values():
        message = record.get("message")
        content = message.get("content") if record.get("type") == "user" and isinstance(message, dict) else None
        for block in content if isinstance(content, list) else ():
            if isinstance(block, dict) and block.get("type") == "tool_result":
                found.setdefault(str(block.get("tool_use_id", "")), _result_parts(block))
    return found


def _replies_by_id(records: Mapping[str, dict[str, Any]]) -> dict[str, tuple[list[Part], list[Part]]]:
    """Every response of the file by its `message.id`: its parts as they go back as input, and as they
    were generated, from all its records in file order. A response is one record per content block, and
    with parallel calls a root-to-leaf path passes only through some of them (each call's result links
    to that call's own record, and the next response to one of the results)."""
    found: dict[str, tuple[list[Part], list[Part]]] = {}
    for record in records.values():
        message = record.get("message")
        if record.get("type") != "assistant" or not isinstance(message, dict) or not message.get("id"):
            continue
        reply, generated = found.setdefault(str(message["id"]), ([], []))
        reply.extend(_parts(message.get("content"), thinking=thinking_kept(str(message.get("model", "")))))
        generated.extend(_parts(message.get("content"), thinking=True))
    return found


def _with_every_result(back: Message | None, reply: Sequence[Part], results: Mapping[str, list[Part]]) -> Message | None:
    """`back` with the results of `reply`'s calls that are not on its path, every result in call order
    (as the request sends them) before the rest. Claude Code links the result of each of several
    parallel calls to its own call's record, so a root-to-leaf path passes through one of them; the
    request held them all."""
    calls = [p.id for p in reply if isinstance(p, ToolUsePart)]
    present = {p.tool_use_id for p in back.parts if isinstance(p, ToolResultPart)} if back is not None else set()
    if all(call in present or call not in results for call in calls):
        return back
    # A result's parts: the result, then the images that came with it.
    groups: dict[str, list[Part]] = {}
    others: list[Part] = []
    current: list[Part] | None = None
    for part in back.parts if back is not None else ():
        if isinstance(part, ToolResultPart):
            current = groups.setdefault(part.tool_use_id, [])
            current.append(part)
        elif isinstance(part, ImagePart) and current is not None:
            current.append(part)
        else:
            current = None
            others.append(part)
    ordered = [part for call in calls for part in groups.pop(call, None) or results.get(call, [])]
    ordered += [part for group in groups.values() for part in group]
    return Message(role="user", parts=(*ordered, *others))


def claude_code_steps(path: Path, counter: TokenCounter | None = None) -> list[GrowthStep]:
    """The growth steps of one Claude Code session file, main conversation and sub-agents alike.
    `counter` sizes each reply against its output count (`replayed_reasoning`; default: the profile
    `counter_for_model` picks for the reply's model)."""
    steps: dict[tuple[str, str], GrowthStep] = {}
    records = _records(path)
    results, replies = _results_by_call(records), _replies_by_id(records)
    for chain in _chains(records):
        for run in _calls(chain):
            for previous, call in pairwise(run):
                if (previous.id, call.id) in steps or not previous.real or not call.real:
                    continue  # a prefix shared by two branches is one step, not two
                reply, generated = replies.get(previous.id, (previous.reply, previous.generated))
                added = [Message(role="assistant", parts=tuple(reply))] if reply else []
                back = _with_every_result(_user_message(previous.after), reply, results)
                after = [back] if back is not None else []
                added += after
                sizer = counter or counter_for_model(previous.model)
                steps[(previous.id, call.id)] = GrowthStep(
                    path.name, call.model, previous.real, call.real, tuple(added), tuple(generated), previous.output,
                    replayed_reasoning(reply, generated, previous.output, previous.model, sizer, after),
                    _ends_turn(generated, previous.model, after), _unattached(previous),
                )
    return list(steps.values())


def _pi_parts(content: Any, *, thinking: bool) -> list[Part]:
    """A pi message's content list as parts (tool results are messages of their own there)."""
    return _content_parts(content, thinking=thinking, call_type="toolCall", arguments_key="arguments",
                          image_type=lambda block: block.get("mimeType", ""), results=False)


def pi_steps(path: Path) -> list[GrowthStep]:
    """The growth steps of one pi coding-agent session (JSONL, a tree by `id`/`parentId`; assistant
    messages carry `usage`). pi adds nothing to what it sends that the session does not record, which makes
    its sessions the check of a profile on its own, with no harness allowance."""
    records = _records_by(path, "id")

    def message(record: dict[str, Any] | None) -> dict[str, Any]:
        value = (record or {}).get("message") if (record or {}).get("type") == "message" else None
        return value if isinstance(value, dict) else {}

    def real(usage: Mapping[str, Any]) -> int:
        return sum(int(usage.get(key) or 0) for key in ("input", "cacheRead", "cacheWrite"))

    steps: list[GrowthStep] = []
    for record in records.values():
        current = message(record)
        if current.get("role") != "assistant" or not current.get("usage"):
            continue
        back: list[Part] = []
        parent = records.get(str(record.get("parentId")))
        while parent is not None and message(parent).get("role") != "assistant":
            earlier = message(parent)
            if earlier.get("role") == "toolResult":
                text = "\n".join(str(b.get("text", "")) for b in earlier.get("content") or () if b.get("type") == "text")
                images = [p for p in _pi_parts(earlier.get("content"), thinking=False) if isinstance(p, ImagePart)]
                back[:0] = [ToolResultPart(str(earlier.get("toolCallId", "")), text, is_error=bool(earlier.get("isError"))), *images]
            elif earlier.get("role") == "user":
                back[:0] = _pi_parts(earlier.get("content"), thinking=False)
            parent = records.get(str(parent.get("parentId")))
        previous = message(parent)
        if not previous.get("usage"):
            continue
        model = str(current.get("model", ""))
        reply = _pi_parts(previous.get("content"), thinking=thinking_kept(model))
        added = [Message(role="assistant", parts=tuple(reply))] if reply else []
        if back:
            added.append(Message(role="user", parts=tuple(back)))
        steps.append(GrowthStep(
            path.name, model, real(previous["usage"]), real(current["usage"]), tuple(added),
            tuple(_pi_parts(previous.get("content"), thinking=True)), int(previous["usage"].get("output") or 0),
        ))
    return steps


def score_growth(steps: Iterable[GrowthStep], counter: TokenCounter, *, per_step: int = 0) -> GrowthScore:
    """`per_step`: tokens added to every step's estimate (a harness allowance, see `fit_claude`)."""
    ratios: list[float] = []
    errors: list[float] = []
    for step in steps:
        estimated = sum(count_message(m, counter) for m in step.added) + step.reasoning + per_step
        if step.growth > 0 and estimated > 0:
            ratios.append(step.growth / estimated)
        errors.append(abs(step.previous_real + estimated - step.real) * 100.0 / step.real)
    return GrowthScore(tuple(ratios), tuple(errors))


def _stand_in(real: int, reasoning: int) -> Usage:
    """A recorded call's usage as `score_ledger` anchors on it: its real input, and as its output only
    the reply's reasoning that goes back unrecorded (so the ledger also drops it when the turn ends)."""
    return Usage(input_tokens=real, output_tokens=reasoning, reasoning_tokens=reasoning)


def score_ledger(sessions: list[list[GrowthStep]], counter: TokenCounter, prior: int = 0) -> GrowthScore:
    """Each step scored as Nova's `TokenLedger` estimates it (`score_growth`'s figures): one ledger per
    session (a list of steps, in order), which learns its per-step allowance from the real input of the
    calls already answered (`record(..., sent=...)`) and adds it to every anchored estimate; `prior` is
    its allowance before the first answer (`GrowthAllowance`). The ledger is fed only what it would have
    before each call.

    The recordings' output counts are often partial streaming counts, so the previous reply cannot be
    anchored on its output tokens as a live call would: each call's anchor is a stand-in message just
    before the reply, with the call's real input and, as its output, only the reply's reasoning that
    goes back unrecorded (`GrowthStep.reasoning`); the reply is counted by the profile like the rest of
    what was added (as the growth figures of `score_growth` count it). A step that does
    not continue the previous one (a sub-agent branch, a compaction) starts a new anchor the way a
    compaction does (`clear`), keeping what the session learned. A reply that ends its turn drops the
    reasoning its turn sent back (`GrowthStep.ends_turn`), as the live ledger does."""
    ratios: list[float] = []
    errors: list[float] = []
    for steps in sessions:
        ledger = TokenLedger(counter, growth_prior=prior)
        last_real: int | None = None
        for index, step in enumerate(steps):
            anchor_id = f"call-{index}"  # call k-1, recorded when step index-1 was answered
            if step.previous_real != last_real:  # not the call the ledger is anchored on
                ledger.clear()
                ledger.record(anchor_id, _stand_in(step.previous_real, step.reasoning), reasoning_replayed=True)
            sent = [Message(role="user", parts=(TextPart(""),), id=anchor_id), *step.added]
            predicted = ledger.estimate(sent)
            estimated_growth = predicted - step.previous_real
            if step.growth > 0 and estimated_growth > 0:
                ratios.append(step.growth / estimated_growth)
            errors.append(abs(predicted - step.real) * 100.0 / step.real)
            # Call k answered: the ledger learns from its real input against what was sent. Its reply's
            # reasoning that goes back is part of the anchor, as a live reply's output tokens are.
            following = steps[index + 1] if index + 1 < len(steps) else None
            ledger.record(f"call-{index + 1}", _stand_in(step.real, following.reasoning if following else 0),
                          sent=sent, reasoning_replayed=True, ends_turn=following is not None and following.ends_turn,
                          keeps_reasoning=thinking_kept(step.model))
            last_real = step.real
    return GrowthScore(tuple(ratios), tuple(errors))


@dataclass(frozen=True, slots=True)
class ClaudeFit:
    """`scale`: Claude tokens per cl100k token of content, fitted on `steps` growth steps; `tool_use`:
    what a tool call costs beyond its name and arguments (its wrapper), fitted on `replies` complete
    replies. `harness`: the per-step remainder fitted beside the scale — what the recording harness sent
    back without recording it."""

    scale: float
    tool_use: int
    harness: int
    replies: int
    steps: int

    def counter(self) -> TokenCounter:
        return claude_counter(self.scale, self.tool_use)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _cl100k() -> TokenCounter:
    """What the Claude counter scales: exact cl100k (its heuristic where tiktoken is missing)."""
    return claude_counter(1.0, 0)


def _reply_pieces(parts: Iterable[Part]) -> tuple[int, int]:
    """cl100k tokens of a generated reply's content, and its number of tool calls."""
    base = _cl100k()
    content = calls = 0
    for part in parts:
        if isinstance(part, TextPart):
            content += base.count(part.text)
        elif isinstance(part, ToolUsePart):
            calls += 1
            content += base.count(part.name) + base.count(_json(dict(part.input)))
    return content, calls


def _complete_reply(step: GrowthStep) -> tuple[int, int, int] | None:
    """`(output_tokens, content, calls)` of the step's previous reply when its recorded output count can
    be trusted. Claude Code often records a partial streaming count (1, 6, 8 tokens for a reply with a
    tool call), and never counts below cl100k on English and code, so a count under the reply's cl100k
    pieces is partial. Replies with thinking are left out: Claude 4 models bill the full thinking but
    return (and record) a summary of it."""
    if not step.generated or any(isinstance(p, ThinkingPart) for p in step.generated):
        return None
    content, calls = _reply_pieces(step.generated)
    if content <= 0 or step.output_tokens < content:
        return None
    return step.output_tokens, content, calls


def fit_claude_tokenizer(steps: Iterable[GrowthStep]) -> tuple[float, int, int]:
    """`(scale, tool_use, replies)`: minimizes the sum of |log(output ÷ (scale x content + tool_use x
    calls))| over the complete replies (robust: one odd reply moves it little)."""
    rows = [row for step in steps if (row := _complete_reply(step)) is not None]
    if not rows:
        raise ValueError("no complete replies to fit the tokenizer on")
    best: tuple[float, float, int] | None = None
    for hundredths in range(80, 201):  # scale 0.80 .. 2.00
        scale = hundredths / 100.0
        for tool_use in range(0, 121):
            loss = sum(abs(math.log(out / max(scale * content + tool_use * calls, 1.0))) for out, content, calls in rows)
            if best is None or loss < best[0] - 1e-12:
                best = (loss, scale, tool_use)
    assert best is not None
    return best[1], best[2], len(rows)


def _weighted_median(values: Sequence[tuple[float, float]]) -> float:
    """The value at half the total weight of `(value, weight)` pairs."""
    ordered = sorted(values)
    half, seen = sum(w for _, w in ordered) / 2.0, 0.0
    for value, weight in ordered:
        seen += weight
        if seen >= half:
            return value
    return ordered[-1][0]


def _growth_rows(steps: Iterable[GrowthStep], tool_use: int) -> list[tuple[int, int, int, int]]:
    """`(growth beyond the reasoning, cl100k content, wrappers, real)` of each step a fit can use: one
    that grew, with no image (an image's cost is a constant of its own, `IMAGE_TOKENS`) and no file no
    record holds (`GrowthStep.unrecorded`)."""
    base = _cl100k()
    bare, wrapped = (ScaledCounter(base, 1.0, Overheads(message=0, tool_use=0, tool_result=0)),
                     ScaledCounter(base, 1.0, Overheads(tool_use=tool_use)))
    rows = []
    for step in steps:
        if step.growth <= 0 or step.unrecorded or any(isinstance(p, ImagePart) for m in step.added for p in m.parts):
            continue
        content = sum(count_message(m, bare) for m in step.added)
        wrappers = sum(count_message(m, wrapped) for m in step.added) - content
        rows.append((step.growth - step.reasoning, content, wrappers, step.real))
    return rows


def fit_claude(steps: Sequence[GrowthStep]) -> ClaudeFit:
    """The tool-call wrapper from the replies' output tokens (`fit_claude_tokenizer`), then the scale and
    the harness allowance together: each step grows by scale x the cl100k count of what was appended,
    plus the wrappers, plus a constant of the harness's, and each complete reply counts scale x its
    cl100k content plus its calls' wrappers (Claude's own count, no harness in it). They minimize the sum
    of |real - that| ÷ the step's real input (the anchored error each miss gives a step's estimate) over
    both, the constant at each scale being the weighted median of what the steps leave: a step that grew
    by something no record holds (a CLAUDE.md Claude Code attached unrecorded) moves neither much. The
    replies alone are few and prose (4 on one half of the shared files: x1.00, where that half's steps
    say x1.09) and the steps are code and tool output; steps alone cannot tell the scale from the
    constant where they are all of one size (a few to-do updates), which the replies can."""
    _, tool_use, replies = fit_claude_tokenizer(steps)
    rows = _growth_rows(steps, tool_use)
    if not rows:
        raise ValueError("no growth steps to fit on")
    complete = [(row, step.real) for step in steps if (row := _complete_reply(step)) is not None]
    best: tuple[float, float, float] | None = None  # (loss, scale, harness)
    for hundredths in range(80, 201):  # scale 0.80 .. 2.00
        scale = hundredths / 100.0
        left = [(growth - scale * content - wrappers, 1.0 / real) for growth, content, wrappers, real in rows]
        harness = _weighted_median(left)
        loss = sum(abs(value - harness) * weight for value, weight in left)
        loss += sum(abs(out - scale * content - tool_use * calls) / real for (out, content, calls), real in complete)
        if best is None or loss < best[0] - 1e-12:
            best = (loss, scale, harness)
    assert best is not None
    return ClaudeFit(best[1], tool_use, round(best[2]), replies, len(rows))
