"""Make a resumed history acceptable to any provider before the first request (SES-5).

A session can stop anywhere: between a tool call and its result, halfway through a parallel batch, after
a provider wrote two assistant messages in a row. Sending such a history is an HTTP 400 on every
provider, so `repair_history` rewrites the *view* (never the log) until these hold:

- every tool_use is answered by exactly one tool_result, in the message right after it, results first
  and in call order; a missing one becomes a synthetic error result "interrupted";
- a reused tool_use id is renamed `<id>~<n>` (providers want unique ids), with its result;
- a tool_result with no call before it is dropped from the view (the raw log keeps it);
- no thinking parts (their signatures are only valid inside the original tool loop);
- roles alternate user / assistant and the history starts with a user message; a stray system message
  becomes user text; empty messages and empty text parts are dropped. One exception: a compaction
  summary right after the opening message stays its own message, as the live compaction sends it (both
  provider APIs take two user messages in a row). Merged, the opening would hold the summary, and every
  later compaction would fold it instead of keeping it as the prefix the prompt cache reads.

It is a pure function: same input, same output (derived ids, no clock), and a history that already
satisfies these rules comes back unchanged.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from nova.messages import Message, Part, TextPart, ThinkingPart, ToolResultPart, ToolUsePart, harness_message

__all__ = ["INTERRUPTED", "HistoryScan", "RepairReport", "interrupted_answers", "pending_interrupted_answers",
           "positions_after_repair", "repair_history"]

INTERRUPTED = "interrupted: the session stopped before this tool call returned a result"
RESUME_PLACEHOLDER = "[conversation resumed]"


_REPAIRS = (
    ("synthetic_results", "unanswered tool call(s) marked interrupted"),
    ("dropped_results", "tool result(s) without a call dropped from the view"),
    ("dropped_tool_uses", "misplaced tool call(s) dropped"),
    ("renamed_tool_uses", "reused tool call id(s) renamed"),
    ("moved_results", "tool result(s) moved next to their call"),
    ("merged_messages", "consecutive same-role message(s) merged"),
    ("system_to_user", "system message(s) turned into user text"),
    ("thinking_stripped", "thinking part(s) removed"),
    ("dropped_empty", "empty message(s) dropped"),
)
"""Each counted repair of a `RepairReport` (a count, or the list of ids it touched) and how `describe`
names it, in the order it says them."""


@dataclass(slots=True)
class RepairReport:
    """What `repair_history` changed, for the resume notice and the audit log."""

    thinking_stripped: int = 0
    synthetic_results: list[str] = field(default_factory=list)
    """tool_use ids answered with a synthetic "interrupted" error."""
    dropped_results: list[str] = field(default_factory=list)
    """tool_use ids of results with no call (or a second result for the same call)."""
    dropped_tool_uses: list[str] = field(default_factory=list)
    """tool_use parts outside an assistant message."""
    renamed_tool_uses: list[str] = field(default_factory=list)
    """Reused tool_use ids, renamed `<id>~<n>` in the view (with their results)."""
    merged_messages: int = 0
    system_to_user: int = 0
    dropped_empty: int = 0
    moved_results: int = 0
    """Results that were found later than the message right after their call and moved there."""
    added_placeholder: bool = False

    @property
    def changed(self) -> bool:
        return self.added_placeholder or any(self._count(name) for name, _ in _REPAIRS)

    def describe(self) -> str:
        bits = [f"{count} {what}" for name, what in _REPAIRS if (count := self._count(name))]
        if self.added_placeholder:
            bits.append("a user placeholder added before the first assistant message")
        return "; ".join(bits) if bits else "history needed no repair"

    def _count(self, name: str) -> int:
        value: int | list[str] = getattr(self, name)
        return len(value) if isinstance(value, list) else value


def repair_history(
    messages: Sequence[Message], *, known_valid: bool = False
) -> tuple[list[Message], RepairReport]:
    """The history with every rule above made true, and what it took. `known_valid`: a `HistoryScan`
    fed exactly these messages already said no rule is broken (the transcript reader runs one while it
    decodes), so the messages are not walked again."""
    if known_valid or _already_valid(messages):
        # The usual resume: nothing to change, so nothing is rebuilt.
        return list(messages), RepairReport()
    return _repair(messages)


def interrupted_answers(repaired: Sequence[Message], report: RepairReport) -> Message | None:
    """The message of synthetic "interrupted" results the repair put at the end of `repaired`, when the
    record stopped right after a tool call (the session died while it ran); None otherwise. Appended to
    the record, it makes the record say what the view says."""
    if not repaired or not report.synthetic_results:
        return None
    last = repaired[-1]
    synthetic = set(report.synthetic_results)
    if last.role != "user" or not last.parts or not all(
            isinstance(p, ToolResultPart) and p.tool_use_id in synthetic and p.content == INTERRUPTED
            for p in last.parts):
        return None
    return last


def pending_interrupted_answers(messages: Sequence[Message]) -> Message | None:
    """What a resume will record for a log that stops right after a tool call (its process died while
    the call ran): the same "interrupted" results, so a reader of a log nobody is writing can show them
    before any resume has written them. None when the last message leaves no call unanswered."""
    if not messages or messages[-1].role != "assistant" or not any(
            isinstance(p, ToolUsePart) for p in messages[-1].parts):
        return None
    repaired, report = repair_history(messages[-1:])
    return interrupted_answers(repaired, report)


class HistoryScan:
    """Whether a history already keeps every rule above, so that `repair_history` would return it
    unchanged. Fed one message at a time, newest first: the transcript reader decodes backwards and
    feeds each message while it is still in the CPU cache, so a long healthy history costs no second
    walk. Allocates almost nothing; any doubt answers False."""

    __slots__ = ("_answers", "_calls", "_later_role", "_later_summary", "_must_be_oldest", "_valid")

    def __init__(self) -> None:
        self._valid = True
        self._calls: set[str] = set()
        self._answers: list[str] = []  # result ids heading the message after the next one fed, in order
        self._later_role = ""  # role of the message fed last ("" before the first)
        self._later_summary = False  # the message fed last is a compaction summary
        self._must_be_oldest = False  # the message fed last may only be the opening, before the summary

    def add(self, m: Message) -> None:
        if not self._valid:
            return
        if self._must_be_oldest or m.role == "system" or not m.parts:
            self._valid = False
            return
        if m.role == self._later_role:
            # Two user messages in a row are kept only as the opening and the summary after it.
            if not (self._later_summary and m.role == "user" and not _is_summary(m)):
                self._valid = False
                return
            self._must_be_oldest = True
        self._later_summary = _is_summary(m)
        ids: list[str] = []  # a user message's result ids in order, or an assistant message's call ids
        leading = True  # tool results must come before anything else in their message
        for p in m.parts:
            if isinstance(p, ToolResultPart):
                if m.role != "user" or not leading:
                    self._valid = False
                    return
                ids.append(p.tool_use_id)
                continue
            leading = False
            if isinstance(p, ThinkingPart) or (isinstance(p, TextPart) and not p.text):
                self._valid = False
                return
            if isinstance(p, ToolUsePart):
                if m.role != "assistant" or p.id in self._calls:
                    self._valid = False
                    return
                self._calls.add(p.id)
                ids.append(p.id)
        if m.role == "assistant":
            # Its calls are exactly the results heading the message after it (none when it is last).
            if ids != self._answers:
                self._valid = False
                return
            ids = []
        self._answers = ids
        self._later_role = m.role

    @property
    def valid(self) -> bool:
        """After the oldest message: the history starts with a user message that answers no call."""
        if self._later_role == "":
            return self._valid
        return self._valid and self._later_role == "user" and not self._answers


def _already_valid(messages: Sequence[Message]) -> bool:
    scan = HistoryScan()
    for m in reversed(messages):
        scan.add(m)
    return scan.valid


def _repair(messages: Sequence[Message]) -> tuple[list[Message], RepairReport]:
    report = RepairReport()
    cleaned = _clean(messages, report)
    paired = _pair_tool_results(cleaned, report)
    merged = _merge_same_role(paired, report)
    if merged and merged[0].role == "assistant":
        first = merged[0]
        placeholder = Message(
            role="user", parts=(TextPart(RESUME_PLACEHOLDER),), id=f"{first.id}.resume", created_at=first.created_at
        )
        merged.insert(0, placeholder)
        report.added_placeholder = True
    return merged, report


def _clean(messages: Sequence[Message], report: RepairReport) -> list[Message]:
    """Strip thinking and empty text, turn system messages into user text, drop what is left empty."""
    out: list[Message] = []
    for m in messages:
        parts: list[Part] = []
        for p in m.parts:
            if isinstance(p, ThinkingPart):
                report.thinking_stripped += 1
            elif isinstance(p, TextPart) and not p.text:
                continue
            else:
                parts.append(p)
        role = m.role
        if role == "system":
            # Providers take system text only as the top-level system prompt; keep its words as user text.
            role = "user"
            parts = [p for p in parts if not isinstance(p, ToolUsePart | ToolResultPart)]
            report.system_to_user += 1
        if not parts:
            report.dropped_empty += 1
            continue
        if role != m.role or len(parts) != len(m.parts):
            m = replace(m, role=role, parts=tuple(parts))
        out.append(m)
    return out


def _pair_tool_results(messages: list[Message], report: RepairReport) -> list[Message]:
    """Put each call's result (or a synthetic one) at the head of the message right after the call."""
    # Where every result and every calling assistant message is, by tool_use id.
    result_at: dict[str, list[tuple[int, int]]] = {}
    calls_at: dict[str, list[int]] = {}
    for i, m in enumerate(messages):
        for j, p in enumerate(m.parts):
            if isinstance(p, ToolResultPart) and m.role == "user":
                result_at.setdefault(p.tool_use_id, []).append((i, j))
            elif isinstance(p, ToolUsePart) and m.role == "assistant":
                at = calls_at.setdefault(p.id, [])
                if not at or at[-1] != i:
                    at.append(i)

    # For each call, the first unused result after it and before the next call reusing its id. Real
    # recordings do reuse ids across turns; a reused id is renamed in the view because providers
    # require tool_use ids to be unique within a request.
    consumed: dict[tuple[int, int], int] = {}  # result position -> index of the calling message
    next_result: dict[str, int] = {}
    seen: dict[str, int] = {}
    plan: dict[int, list[tuple[ToolUsePart, ToolResultPart]]] = {}
    for i, m in enumerate(messages):
        if m.role != "assistant":
            continue
        for p in m.parts:
            if not isinstance(p, ToolUsePart):
                continue
            later_calls = [k for k in calls_at[p.id] if k > i]
            limit = later_calls[0] if later_calls else len(messages)
            positions = result_at.get(p.id, [])
            cursor = next_result.get(p.id, 0)
            while cursor < len(positions) and (positions[cursor][0] <= i or positions[cursor] in consumed):
                cursor += 1
            count = seen.get(p.id, 0) + 1
            seen[p.id] = count
            call = p if count == 1 else replace(p, id=f"{p.id}~{count}")
            if count > 1:
                report.renamed_tool_uses.append(p.id)
            if cursor < len(positions) and positions[cursor][0] < limit:
                k, j = positions[cursor]
                consumed[(k, j)] = i
                found = messages[k].parts[j]
                assert isinstance(found, ToolResultPart)
                result = found if call.id == p.id else replace(found, tool_use_id=call.id)
                cursor += 1
            else:
                result = ToolResultPart(tool_use_id=call.id, content=INTERRUPTED, is_error=True)
                report.synthetic_results.append(call.id)
            next_result[p.id] = cursor
            plan.setdefault(i, []).append((call, result))

    out: list[Message] = []
    pending: tuple[list[ToolResultPart], Message] | None = None  # results owed to the last assistant
    for i, m in enumerate(messages):
        others: list[Part] = []
        calls = iter(plan.get(i, ()))
        for j, p in enumerate(m.parts):
            if isinstance(p, ToolResultPart):
                owner = consumed.get((i, j))
                if owner is None:
                    report.dropped_results.append(p.tool_use_id)
                elif owner != i - 1:
                    report.moved_results += 1
                continue
            if isinstance(p, ToolUsePart):
                if m.role != "assistant":
                    report.dropped_tool_uses.append(p.id)
                    continue
                p = next(calls)[0]
            others.append(p)

        if pending is not None:
            results, owner_message = pending
            pending = None
            if m.role == "user":
                # Results go first (Anthropic requires it); the user's own words follow.
                out.append(_rebuilt(m, [*results, *others]))
                continue
            out.append(_results_message(owner_message, results))

        if not others:
            report.dropped_empty += 1
            continue
        out.append(_rebuilt(m, others))
        if i in plan:
            pending = ([result for _, result in plan[i]], out[-1])
    if pending is not None:
        out.append(_results_message(pending[1], pending[0]))
    return out


def _rebuilt(m: Message, parts: list[Part]) -> Message:
    return m if tuple(parts) == m.parts else m.with_parts(parts)


def _results_message(owner: Message, results: list[ToolResultPart]) -> Message:
    return Message(role="user", parts=tuple(results), id=f"{owner.id}.results", created_at=owner.created_at)


def _summary_after_opening(out: list[Message], message: Message) -> bool:
    """`message`, about to follow `out`, is a compaction summary right after the opening: kept apart."""
    return len(out) == 1 and message.role == "user" and _is_summary(message) and not _is_summary(out[0])


def _is_summary(message: Message) -> bool:
    return message.origin == "summary" or message.has("summary")


def _merge_same_role(messages: list[Message], report: RepairReport) -> list[Message]:
    out: list[Message] = []
    for m in messages:
        if out and out[-1].role == m.role and not _summary_after_opening(out, m):
            prev = out[-1]
            if m.role == "user":
                # Each text keeps who wrote it and the id it had: the person's words stay theirs (and
                # findable by id) however many messages the wire needs them merged into.
                head = prev if "merged_from" in prev.metadata else prev.with_parts(_with_provenance(prev, prev.id))
                parts = [*head.parts, *_with_provenance(m, prev.id)]
                # Keep tool results at the head of the merged user message.
                parts = [p for p in parts if isinstance(p, ToolResultPart)] + [
                    p for p in parts if not isinstance(p, ToolResultPart)
                ]
                # The whole-message marks moved onto the parts: left on the merge they would hide the
                # person's text merged with a harness insert.
                metadata = {k: v for k, v in prev.metadata.items() if k not in _PART_MARKS}
            else:
                parts = [*prev.parts, *m.parts]
                metadata = dict(prev.metadata)
            metadata["merged_from"] = [*prev.metadata.get("merged_from", [prev.id]), m.id]
            out[-1] = replace(prev, parts=tuple(parts), metadata=metadata)
            report.merged_messages += 1
        else:
            out.append(m)
    return out


# Whole-message marks a merge moves onto the text parts (`nova.messages.harness_message`).
_PART_MARKS = ("is_meta", "user_shell")


def _with_provenance(m: Message, merged_id: str) -> list[Part]:
    """`m`'s parts with each text marked: `harness` when `m` was the harness's as a whole, `entry` its
    own id when it now sits in the message `merged_id`."""
    whole = harness_message(m) or m.origin is not None
    out: list[Part] = []
    for p in m.parts:
        if isinstance(p, TextPart):
            harness = p.harness or (whole and not p.entry)
            entry = p.entry or ("" if m.id == merged_id else m.id)
            if harness != p.harness or entry != p.entry:
                p = replace(p, harness=harness, entry=entry)
        out.append(p)
    return out


def positions_after_repair(original: Sequence[Message], repaired: Sequence[Message]) -> list[int]:
    """Where each of `original`'s positions went in `repaired` (`repair_history(original)[0]`): entry `i`
    is the position in `repaired` of the first message that holds `original[i]` or any message after it,
    and entry `len(original)` is `len(repaired)`. So "before message i" keeps its meaning across the
    repair: what came before `original[i]` is before that position, and nothing from `i` on is, except
    when `original[i]` was merged into the message before it (a merged message cannot be split; the
    position is then before the merge, so nothing the caller kept is folded). A dropped message maps to
    the position of the next one kept."""
    # A repaired message holds its own id and, after a merge, every id it was merged from.
    held: dict[str, list[int]] = {}
    for j, m in enumerate(repaired):
        merged = m.metadata.get("merged_from")
        for ident in {m.id, *(merged if isinstance(merged, list) else ())}:
            held.setdefault(str(ident), []).append(j)
    found: list[int | None] = []
    cursor = 0  # walked in order, so a reused id is matched to its own occurrence, not the first one
    for m in original:
        spots = held.get(m.id, [])
        k = bisect_left(spots, cursor)
        if k < len(spots):
            cursor = spots[k]
            found.append(cursor)
        else:
            found.append(None)  # dropped (empty), or an id the repair could not keep
    out = [len(repaired)] * (len(original) + 1)
    for i in range(len(original) - 1, -1, -1):
        spot = found[i]
        out[i] = out[i + 1] if spot is None else min(spot, out[i + 1])
    return out
