"""Two-layer compaction of the working history (CMP-3..8).

Layer 1, `snip_old_tool_results`, never calls a model: walking newest to oldest with a token budget, it
keeps recent and in-budget tool outputs as they are and cuts the others to head + marker + tail, the full
text going to `<session_dir>/tool-output/<message_id>.txt`. Oversized tool_use inputs (a whole file
written through one call) are cut the same way once they are old.

Layer 2, `compact`, folds the older part of history into one summary message: `find_split_point` keeps a
recent tail on a safe boundary (a tool_use never leaves its tool_result behind, a tool loop with thinking
is never cut), the summarizer writes the summary, the user's own messages are copied into it verbatim by
deterministic code, and a restore attachment re-supplies recently read files and the tool list.

These functions are pure with respect to the history (they return new lists) and do no bookkeeping of
their own: the `ContextController` decides when they run and records what they did.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from nova.context.budget import ContextBudget
from nova.context.oversize import fit_message, is_cut_text, least_size
from nova.context.shown_paths import shown_path
from nova.context.spill import is_placeholder
from nova.context.summarize import (
    MAX_CARRIED_PATHS,
    USER_SECTION,
    Summarizer,
    SummaryRequest,
    UserSection,
    continuity_section,
    is_user_message,
    user_entries,
    user_section,
)
from nova.fs.private import private_dir, write_private_text
from nova.history.tool_paths import paths_in
from nova.messages import Message, Part, SummaryPart, TextPart, ThinkingPart, ToolResultPart, ToolUsePart
from nova.model import ToolSpec
from nova.settings import CompactionConfig
from nova.tokens import MemoCounter, TokenCounter, count_message

__all__ = [
    "MIN_FOLD_TOKENS",
    "MIN_KEEP_MESSAGES",
    "OUTPUT_DIR",
    "POST_COMPACTION_FILL",
    "SUMMARY_HEADER",
    "CompactionOutcome",
    "RestoreContext",
    "SnipResult",
    "compact",
    "find_split_point",
    "is_nova_insert",
    "is_snipped",
    "message_size",
    "pinned_opening",
    "snip_old_tool_results",
    "snip_text",
]

log = logging.getLogger(__name__)

OUTPUT_DIR = "tool-output"
SUMMARY_HEADER = "[Previous conversation summary]"
# CMP-5's floor on the kept tail (seed 000): at least 5 messages (the token clamps are the budget's).
MIN_KEEP_MESSAGES = 5
# CMP-5: folding less than this is not worth a summary call.
MIN_FOLD_TOKENS = 2_000
# The compacted view (fixed head, summary, restore, kept tail) fills at most this share of the threshold
# (`ContextBudget.post_compaction_target`), unless the continuity floor alone is larger. At 0.8 a small
# window compacted again after a few calls, each time re-writing the cached prefix.
POST_COMPACTION_FILL = 0.5
# The summary message's own wrapping: header, continuation note, restore heading.
SUMMARY_OVERHEAD = 120
# The summary's own lines of state (where the work stopped) when the floor leaves no room for more.
MIN_BODY_TOKENS = 160
# A restore attachment smaller than this re-supplies nothing worth reading.
MIN_RESTORE_TOKENS = 64
# A kept message is not cut below this (a head and a tail still worth reading).
MIN_CUT_TOKENS = 160
# The continuity rows (files, tasks, rejections, choices, last failure) get at least this much of the floor.
MIN_CARRIED_TOKENS = 400
RECENT_FILES = 5
MAX_NAMED_PATHS = 8
_SNIP_MARK = re.compile(r"\[\.\.\. \d+ chars snipped \.\.\. Full output: [^\]]*\]")

OnRewrite = Callable[[Message], None]


# -- layer 1 -----------------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class SnipResult:
    messages: list[Message]
    rewritten: tuple[str, ...] = ()
    """Ids of the messages whose content changed."""
    parts_snipped: int = 0
    chars_removed: int = 0
    write_failures: int = 0
    snipped_parts: tuple[tuple[str, str, int], ...] = ()
    """(tool name or "tool_use", tool_use id, original size in chars) of each cut part."""


def is_snipped(text: str) -> bool:
    return _SNIP_MARK.search(text) is not None


def snip_text(text: str, *, max_chars: int, path: Path | str) -> str:
    """CMP-3: head `max_chars/4` + marker + tail `max_chars*3/4`. The file paths the cut part names are
    listed after the marker (a few tokens that tell the model what it would find by reading it back)."""
    head_n = max_chars // 4
    tail_n = max_chars * 3 // 4
    head, tail = text[:head_n], text[len(text) - tail_n :] if tail_n else ""
    cut = len(text) - len(head) - len(tail)
    named = paths_in(text[len(head) : len(text) - len(tail)])[:MAX_NAMED_PATHS]
    mentions = f"\n[cut part names: {', '.join(named)}]" if named else ""
    return f"{head}\n[... {cut} chars snipped ... Full output: {shown_path(path)}]{mentions}\n{tail}"


def pinned_opening(history: Sequence[Message], *, budget: ContextBudget, counter: TokenCounter) -> list[Message]:
    """The message every compaction keeps where it is: the first one, when it is the person's opening
    words (the task statement) and takes at most the base share of the user's words. It is then never
    folded, so the prefix up to its end (tools, system, opening) is the same before and after each
    compaction, and the prompt cache reads it instead of writing it again. Only words the person typed:
    a message that also holds what a harness put there (a caveat, a command's output) is folded, and its
    person's words go to the summary's user section, which leaves the rest out."""
    if not history:
        return []
    first = history[0]
    if is_nova_insert(first) or not is_user_message(first):
        return []
    if not all(isinstance(p, TextPart) and not p.harness for p in first.parts):
        return []
    return [first] if message_size(counter)(first) <= budget.threshold // 3 else []


def is_nova_insert(message: Message) -> bool:
    """A summary message or restore attachment Nova put into history (never a user's words)."""
    return message.origin is not None or message.has("summary")


def snip_old_tool_results(
    messages: Sequence[Message],
    *,
    config: CompactionConfig,
    output_dir: Path | None,
    counter: TokenCounter,
    preserve_last: int | None = None,
    budget_tokens: int | None = None,
    on_rewrite: OnRewrite | None = None,
) -> SnipResult:
    """Layer 1 (CMP-3). Walk newest to oldest spending `snip_tool_output_token_budget` on tool outputs;
    the last `snip_preserve_last_n_messages` messages are kept as they are, outputs that fit the
    remaining budget too; an older output longer than `snip_max_chars` that no longer fits is cut.
    Spill placeholders are frozen (SPILL-5) and outputs already cut are left alone, so running this
    twice changes nothing. Without an `output_dir` nothing is cut: a snip must leave a readable path.
    `on_rewrite` gets each rewritten message (the store's `update_message_content`)."""
    preserve = config.snip_preserve_last_n_messages if preserve_last is None else preserve_last
    budget = config.snip_tool_output_token_budget if budget_tokens is None else budget_tokens
    max_chars = config.snip_max_chars
    out = list(messages)
    if output_dir is None:
        return SnipResult(messages=out)
    names = {u.id: u.name for m in messages for u in m.tool_uses()}
    rewritten: list[str] = []
    cut_parts: list[tuple[str, str, int]] = []
    removed = failures = 0
    first_protected = len(out) - preserve
    for index in range(len(out) - 1, -1, -1):
        message = out[index]
        if not (message.has("tool_result") or message.has("tool_use")):
            continue
        candidates = [i for i, p in enumerate(message.parts) if isinstance(p, ToolResultPart | ToolUsePart)]
        new_parts: list[Part] = list(message.parts)
        pending: list[tuple[int, str, str]] = []  # (part index, full text, tool_use id)
        for i in reversed(candidates):
            part = message.parts[i]
            if isinstance(part, ToolResultPart):
                text, use_id = part.content, part.tool_use_id
            elif isinstance(part, ToolUsePart):
                text, use_id = _input_text(part), part.id
            else:
                continue
            tokens = counter.count(text)
            frozen = is_placeholder(text) or is_snipped(text) or is_cut_text(text)
            if index >= first_protected or frozen or len(text) <= max_chars or tokens <= budget:
                budget = max(0, budget - tokens)
                continue
            if isinstance(part, ToolUsePart) and not _long_strings(part, max_chars):
                continue
            pending.append((i, text, use_id))
        if not pending:
            continue
        many = len(candidates) > 1
        wrote = False
        for i, text, use_id in pending:
            path = output_dir / (f"{message.id}.{i}.txt" if many else f"{message.id}.txt")
            try:
                private_dir(output_dir)
                write_private_text(path, text)
            except OSError as exc:
                # Nothing is cut without a readable copy; the output stays whole and the failure is counted.
                failures += 1
                log.warning("could not save snipped output to %s: %s; left uncut", path, exc)
                continue
            part = message.parts[i]
            if isinstance(part, ToolResultPart):
                new_text = snip_text(part.content, max_chars=max_chars, path=path)
                new_parts[i] = ToolResultPart(part.tool_use_id, new_text, part.is_error)
                removed += len(part.content) - len(new_text)
                cut_parts.append((names.get(use_id, "tool"), use_id, len(text)))
            elif isinstance(part, ToolUsePart):
                new_input, saved = _snip_input(part, max_chars=max_chars, path=path)
                new_parts[i] = ToolUsePart(part.id, part.name, new_input)
                removed += saved
                cut_parts.append(("tool_use:" + part.name, use_id, len(text)))
            wrote = True
        if wrote:
            updated = message.with_parts(new_parts).with_metadata(snipped=True)
            out[index] = updated
            rewritten.append(updated.id)
            if on_rewrite is not None:
                on_rewrite(updated)
    return SnipResult(
        messages=out,
        rewritten=tuple(rewritten),
        parts_snipped=len(cut_parts),
        chars_removed=removed,
        write_failures=failures,
        snipped_parts=tuple(cut_parts),
    )


def _input_text(part: ToolUsePart) -> str:
    return json.dumps(dict(part.input), ensure_ascii=False)


def _long_strings(part: ToolUsePart, max_chars: int) -> bool:
    return any(isinstance(v, str) and len(v) > max_chars and not is_snipped(v) for v in part.input.values())


def _snip_input(part: ToolUsePart, *, max_chars: int, path: Path) -> tuple[dict[str, Any], int]:
    """Cut each long string argument; the arguments stay a valid object of the same keys."""
    new: dict[str, Any] = {}
    saved = 0
    for key, value in part.input.items():
        if isinstance(value, str) and len(value) > max_chars and not is_snipped(value):
            cut = snip_text(value, max_chars=max_chars, path=path)
            saved += len(value) - len(cut)
            new[key] = cut
        else:
            new[key] = value
    return new, saved


# -- layer 2: the split ------------------------------------------------------------------------------
def _is_tool_result_message(message: Message) -> bool:
    return message.role == "user" and message.has("tool_result")


def _safe_split(messages: Sequence[Message], index: int) -> bool:
    """True when the tail may start at `index`: it does not start with tool results (their tool_use
    would be folded away) and it does not cut a tool loop whose assistant turns carry thinking (the
    signatures only hold for the whole loop)."""
    if index <= 0 or index >= len(messages):
        return index <= 0
    head = messages[index]
    if _is_tool_result_message(head):
        return False
    answered = {r.tool_use_id for r in head.tool_results()}
    if any(u.id not in answered for u in messages[index - 1].tool_uses()) and head.role == "user":
        return False
    if head.role == "assistant" and _is_tool_result_message(messages[index - 1]):
        j = index - 1
        while j >= 0 and (messages[j].role == "assistant" or _is_tool_result_message(messages[j])):
            if any(isinstance(p, ThinkingPart) for p in messages[j].parts):
                return False
            j -= 1
    return True


def message_size(counter: TokenCounter) -> Callable[[Message], int]:
    """`count_message` with `counter`; a `MemoCounter`'s remembered count when it is one, so a compaction
    does not count again the history the context figure counted before it (at 1,000 messages that was a
    third of a compaction's time)."""
    if isinstance(counter, MemoCounter):
        return counter.count_message
    return lambda message: count_message(message, counter)


def find_split_point(
    messages: Sequence[Message],
    *,
    keep_tokens: int,
    counter: TokenCounter,
    min_messages: int = MIN_KEEP_MESSAGES,
    sizes: Sequence[int] | None = None,
) -> int:
    """Index where the kept tail starts (0 = nothing to fold). The tail takes about `keep_tokens` of the
    newest messages and at least `min_messages`, then the split moves to a safe boundary: earlier
    first (keeping more), later only when no earlier one exists."""
    n = len(messages)
    sizes = list(sizes) if sizes is not None else [count_message(m, counter) for m in messages]
    kept = 0
    split = n
    while split > 0:
        size = sizes[split - 1]
        if n - split >= min_messages and kept + size > keep_tokens:
            break
        kept += size
        split -= 1
    if split <= 0:
        return 0
    target = split
    while split > 0 and not _safe_split(messages, split):
        split -= 1
    if split > 0:
        return split
    split = target + 1
    while split < n and not _safe_split(messages, split):
        split += 1
    return split if split < n else 0


# -- layer 2: the summary ----------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class RestoreContext:
    """What the restore attachment re-supplies after a compaction (CMP-7)."""

    tools: Sequence[ToolSpec] = ()
    skills: Sequence[tuple[str, str]] = ()
    """(name, procedure) of the active skills."""
    read_file: Callable[[str], str | None] | None = None
    """Reads a file's current content (None when unreadable); without it the last read result is used."""


@dataclass(frozen=True, kw_only=True)
class CompactionOutcome:
    status: Literal["compacted", "skipped", "failed"]
    messages: list[Message]
    reason: str = ""
    compacted_ids: tuple[str, ...] = ()
    summary: Message | None = None
    tokens_before: int = 0
    tokens_after: int = 0
    duration_s: float = 0.0
    folded: Sequence[Message] = field(default_factory=tuple)
    written: int = 0
    """Tokens the summarizer wrote (the summary's body): what a model summary call outputs. The summary
    message is larger: Nova adds the user's words, the carried rows and the restored files itself."""
    pinned_tokens: int = 0
    """The opening message kept where it was (`pinned_opening`): a prefix the prompt cache still holds."""

    @property
    def ok(self) -> bool:
        return self.status == "compacted"


def continuation_instruction(transcript_path: str) -> str:
    where = f" The full transcript is at {transcript_path}." if transcript_path else ""
    return (
        "This conversation was compacted: the summary above stands in for the earlier messages." + where
        + " Continue the task from where it stopped, without asking the user to repeat anything; re-read "
        "files or outputs through the paths above when you need their exact content."
    )


def compact(
    messages: Sequence[Message],
    *,
    summarizer: Summarizer,
    budget: ContextBudget,
    counter: TokenCounter,
    system: str = "",
    tools: Sequence[ToolSpec] = (),
    forced: bool = False,
    focus: str = "",
    transcript_path: str = "",
    raw_lookup: Callable[[str], Message | None] | None = None,
    restore: RestoreContext | None = None,
    on_start: Callable[[int, int], None] | None = None,
    fixed_tokens: int = 0,
    context: Sequence[Message] = (),
    save_dir: Path | None = None,
    target: int | None = None,
) -> CompactionOutcome:
    """Layer 2 (CMP-5..8). Returns the new working history, or the unchanged one with status `skipped`
    (nothing worth folding) or `failed` (summarizer error or summary over its cap: nothing changes).
    `context` is the history as the model last saw it (before any layer-1 cut on this call), handed to
    the summarizer so a model summary reads the warm cached prefix; `messages` when not given.
    `fixed_tokens` is what the view holds besides the history (system, tools, pinned state);
    `save_dir` is where the full text of a kept message cut to fit goes (nova.context.oversize).
    `target` is the view to end at, when it must be less than `budget.post_compaction_target`."""
    started = time.monotonic()
    whole = list(messages)
    opening = pinned_opening(whole, budget=budget, counter=counter)
    history = whole[len(opening):]
    sizes = list(map(message_size(counter), history))
    pinned_tokens = sum(map(message_size(counter), opening))
    before = sum(sizes) + pinned_tokens
    fixed_tokens += pinned_tokens

    def unchanged(status: Literal["skipped", "failed"], reason: str) -> CompactionOutcome:
        return CompactionOutcome(status=status, messages=whole, reason=reason, tokens_before=before,
                                 tokens_after=before, duration_s=time.monotonic() - started)

    keep = budget.keep_tokens
    split = find_split_point(history, keep_tokens=keep, counter=counter, sizes=sizes)
    if split == 0 and forced:
        # The provider proved the history does not fit: keep as little as is safe.
        split = find_split_point(history, keep_tokens=0, counter=counter, min_messages=1, sizes=sizes)
    if split == 0:
        return unchanged("skipped", "history already fits the keep budget")
    older, tail = history[:split], history[split:]
    if all(is_nova_insert(m) for m in older):
        return unchanged("skipped", "the only foldable part is an earlier summary")
    threshold = budget.threshold
    min_fold = min(MIN_FOLD_TOKENS, threshold // 8)
    if not forced and sum(sizes[:split]) < min_fold:
        return unchanged("skipped", f"the foldable part is under {min_fold} tokens")

    body_cap = budget.summary_cap
    rest = budget.restore_tokens
    target = min(target, budget.post_compaction_target) if target else budget.post_compaction_target

    def fold(at: int) -> tuple[list[Message], list[str], list[Message], UserSection, str]:
        part = history[:at]
        ids = _covers(part)
        raw = _raw_messages(part, raw_lookup)
        carried = continuity_section(raw or part, budget=carried_budget(threshold), counter=counter,
                                     max_paths=carried_paths(threshold))
        unique = list(dict.fromkeys(text for _, text in user_entries(part, raw)))
        needed = sum(counter.count(text) + 12 for text in unique)
        # The user's words fit whole when they can; never so much that the floor passes the threshold.
        most = (threshold - fixed_tokens - counter.count(carried) - MIN_BODY_TOKENS - SUMMARY_OVERHEAD
                - 2 * MIN_CUT_TOKENS)
        first = counter.count(unique[0]) + 12 if unique else 0
        section = user_section(part, raw, budget=max(64, min(budget.user_tokens(needed, first), most)),
                               counter=counter, opening=opening[0].id if opening else "")
        return part, ids, raw, section, carried

    older, covers, raw_older, users, carried = fold(split)
    # After a compaction the view is at most half the threshold (`post_compaction_target`): it leaves
    # room to work before the next trigger, and the first call after a compaction writes the whole new
    # view to the prompt cache again, so a compaction must buy enough calls to pay that back. The kept
    # tail gets what the fixed prompt, the verbatim user section, the carried files and last failure,
    # the summary and the restore attachment leave; the five-message floor gives way when five
    # messages do not fit.
    room = (target - fixed_tokens - counter.count(users.text) - counter.count(carried) - body_cap - rest
            - SUMMARY_OVERHEAD)
    if room < keep or sum(sizes[split:]) > room:
        floor = MIN_KEEP_MESSAGES if sum(sizes[-MIN_KEEP_MESSAGES:]) <= room else 1
        later = find_split_point(history, keep_tokens=max(min(room, keep), 0), counter=counter, sizes=sizes,
                                 min_messages=floor)
        if later > split:
            split = later
            older, covers, raw_older, users, carried = fold(split)
    tail = history[split:]
    # The continuity floor: the fixed prompt, the user's words, the modified files and the last failure,
    # a few lines of state, and the kept tail each cut to the least that can be read. When it alone is
    # over the target, the summary's other content and the restore attachment give way first.
    least_tail = sum(_least_size(m, counter) for m in tail)
    floor_tokens = (fixed_tokens + counter.count(users.text) + counter.count(carried) + SUMMARY_OVERHEAD
                    + MIN_BODY_TOKENS + least_tail)
    spare = max(0, target - floor_tokens)
    body_tokens = min(body_cap, MIN_BODY_TOKENS + spare)
    rest = min(rest, spare - (body_tokens - MIN_BODY_TOKENS))
    # A summary a few per cent over the length asked for is still a summary (a model rarely lands on the
    # token, and counting the joined parts is not the sum of counting each): refusing it wastes the call
    # and, three times running, opens the breaker with the view still growing.
    cap = counter.count(users.text) + counter.count(carried) + body_tokens + 16 + body_tokens // 32
    request = SummaryRequest(older=older, raw_older=raw_older, system=system, tools=tools,
                             context=list(context) or whole, max_tokens=body_tokens, focus=focus,
                             transcript_path=transcript_path, carried=carried)
    if on_start is not None:
        on_start(len(whole), before)  # COMPACTION_START: only once a summary is really being made
    try:
        body = summarizer.summarize(request)
    except Exception as exc:  # any summarizer failure is a failed compaction, never a crash (CMP-8)
        log.warning("summary failed (%s): %s", summarizer.name, exc)
        return unchanged("failed", f"summarizer failed: {type(exc).__name__}: {exc}")
    body = _strip_user_section(body).strip()
    if not body:
        return unchanged("failed", "the summarizer returned an empty summary")
    summary_text = "\n\n".join(t for t in (users.text, carried, body) if t)
    size = counter.count(summary_text)
    if size > cap:
        return unchanged("failed", f"summary of {size} tokens is over its cap of {cap}")

    tail, orphans = _drop_orphans(tail)
    text = f"{SUMMARY_HEADER}\n{summary_text}\n\n{continuation_instruction(transcript_path)}"
    parts: list[Part] = [SummaryPart(text=text, covers=tuple(covers))]
    attachment = _restore_attachment(history, tail, restore or RestoreContext(tools=tools),
                                     budget=rest, counter=counter) if rest >= MIN_RESTORE_TOKENS else ""
    if attachment:
        parts.append(TextPart(attachment))
    head_tokens = fixed_tokens + count_message(Message(role="user", parts=tuple(parts)), counter)
    tail = _fit_tail(tail, room=target - head_tokens, counter=counter, save_dir=save_dir,
                     transcript_path=transcript_path, raw_lookup=raw_lookup)
    after_view = head_tokens + sum(map(message_size(counter), tail))
    goal = "half the threshold" if target == budget.post_compaction_target else "half the view it started from"
    bound = goal if after_view <= target else "the continuity floor"
    sized: dict[str, Any] = {"target": target, "view": after_view, "bound": bound, "floor": floor_tokens}
    if users.left_out:
        sized["users_cut"] = [x.to_dict() for x in users.left_out]
    summary = Message(role="user", parts=tuple(parts), origin="summary").with_metadata(compaction=sized)
    new_history = [*opening, summary, *tail]
    after = sum(map(message_size(counter), new_history))
    return CompactionOutcome(
        status="compacted",
        messages=new_history,
        compacted_ids=tuple([m.id for m in older] + orphans),
        summary=summary,
        tokens_before=before,
        tokens_after=after,
        duration_s=time.monotonic() - started,
        folded=tuple(older),
        written=counter.count(body),
        pinned_tokens=pinned_tokens,
    )


# About what one row of the files modified takes: "- <path> (msg <id>)".
PATH_ROW_TOKENS = 30


def carried_budget(threshold: int) -> int:
    """Tokens the continuity rows (files, tasks, rejections, choices, failures) may take in a summary: a
    share of the threshold that grows with it, up to a fifth — at 8k every row crowds out the kept tail
    and the user's words, at 200k all of them fit. The files modified are never cut to it."""
    return max(MIN_CARRIED_TOKENS, int(threshold * min(0.2, threshold / 80_000)))


def carried_paths(threshold: int) -> int:
    """How many files modified a summary lists by name (the rest as a count): at least 40, and as many as
    half the continuity rows' budget holds at a row each (~30 tokens: a path and its message id), so a
    long session at a large window names every file it changed — a few hundred at 200k."""
    return max(MAX_CARRIED_PATHS, carried_budget(threshold) // (2 * PATH_ROW_TOKENS))


def _least_size(message: Message, counter: TokenCounter) -> int:
    """The least `_fit_tail` can cut a kept message to: a message the user wrote is never cut (nor their
    words beside tool results), and a part is not cut below what can still be read."""
    if is_user_message(message):
        return count_message(message, counter)
    return least_size(message, counter=counter, floor=MIN_CUT_TOKENS, force=True, keep_person=True)


def _fit_tail(tail: list[Message], *, room: int, counter: TokenCounter, save_dir: Path | None,
              transcript_path: str, raw_lookup: Callable[[str], Message | None] | None = None) -> list[Message]:
    """The kept tail within `room` tokens: its largest messages cut (head, note, tail), never a message
    the user wrote (those are the continuity floor)."""
    sizes = list(map(message_size(counter), tail))
    over = sum(sizes) - room
    if over <= 0:
        return tail
    out = list(tail)
    for i in sorted(range(len(tail)), key=lambda k: sizes[k], reverse=True):
        if over <= 0:
            break
        if is_user_message(tail[i]) or sizes[i] <= MIN_CUT_TOKENS:
            continue
        share = max(MIN_CUT_TOKENS, sizes[i] - over)
        cut = fit_message(tail[i], share=share, counter=counter, save_dir=save_dir, transcript=transcript_path,
                          reason="kept after a compaction, cut so the new view fits half the threshold",
                          size=sizes[i], original=raw_lookup(tail[i].id) if raw_lookup else None, force=True,
                          keep_person=True)
        if cut is None:
            continue
        out[i] = cut
        over -= sizes[i] - count_message(cut, counter)
    return out


def _covers(older: Sequence[Message]) -> list[str]:
    """Ids of every raw message the new summary stands for: earlier summaries' covers plus the rest. A
    summary the recorded agent wrote (imported, no Nova `origin`) is history too: its own id is covered."""
    covers: list[str] = []
    for m in older:
        for p in m.parts:
            if isinstance(p, SummaryPart):
                covers.extend(p.covers)
        if m.origin is None:
            covers.append(m.id)
    return list(dict.fromkeys(covers))


def _raw_messages(older: Sequence[Message], lookup: Callable[[str], Message | None] | None) -> list[Message]:
    """The raw originals of `older`, in order: each message as first seen, and for each summary the
    messages it stands for (CMP-10: rebuild from raw events, not from a summary of a summary). A summary
    whose messages cannot all be read back (a session resumed from a summary, a recording that starts after
    its agent compacted) is kept as it is beside what was found, so its carried rows and user entries are
    folded in rather than lost. [] without a lookup."""
    if lookup is None:
        return []
    out: list[Message] = []
    for m in older:
        summaries = [p for p in m.parts if isinstance(p, SummaryPart)]
        if not summaries:
            out.append(lookup(m.id) or m)
            continue
        found = [lookup(i) for s in summaries for i in s.covers]
        out.extend(f for f in found if f is not None)
        rest = [p for p in m.parts if not isinstance(p, SummaryPart)]
        if any(f is None for f in found) or not found:
            out.append(m)  # it stands for messages nobody can read back: fold it as it is
        elif rest and m.origin is None:
            out.append(m.with_parts(rest))  # a recorded summary merged with other parts: those parts
    unique: dict[str, Message] = {}
    for m in out:
        unique.setdefault(m.id, m)
    return list(unique.values())


def _strip_user_section(body: str) -> str:
    """Drop a user section the summarizer wrote anyway: ours is built from the raw messages."""
    heading = f"## {USER_SECTION}"
    if heading not in body:
        return body
    start = body.index(heading)
    nxt = body.find("\n## ", start + len(heading))
    return body[:start] + (body[nxt + 1 :] if nxt >= 0 else "")


def _drop_orphans(tail: list[Message]) -> tuple[list[Message], list[str]]:
    """Tool results in the tail whose tool_use was folded away (only possible in a history that was
    already malformed): removed from the view, their messages reported as compacted."""
    uses = {u.id for m in tail for u in m.tool_uses()}
    kept: list[Message] = []
    orphaned: list[str] = []
    for m in tail:
        bad = [r for r in m.tool_results() if r.tool_use_id not in uses]
        if not bad:
            kept.append(m)
            continue
        parts = [p for p in m.parts if not (isinstance(p, ToolResultPart) and p.tool_use_id not in uses)]
        orphaned.append(m.id)
        if parts:
            kept.append(m.with_parts(parts))
    return kept, orphaned


def _restore_attachment(
    history: Sequence[Message], tail: Sequence[Message], restore: RestoreContext, *, budget: int,
    counter: TokenCounter,
) -> str:
    """CMP-7's four parts: recently read files (those no longer visible in the tail), active skills'
    procedures, the current tool list, and a note that this is reconstructed context."""
    visible = {r.tool_use_id for m in tail for r in m.tool_results()}
    results = {r.tool_use_id: r for m in history for r in m.tool_results()}
    recent: dict[str, str] = {}
    in_view: set[str] = set()
    for m in reversed(history):
        for u in reversed(m.tool_uses()):
            path = u.input.get("path") or u.input.get("file_path")
            if u.name not in ("read_file", "view") or not isinstance(path, str) or path in recent:
                continue
            if u.id not in results or results[u.id].is_error:
                continue  # a refused or failed read: restoring it would read what the policy kept out
            if u.id in visible:
                recent[path] = ""  # still in view: nothing to restore, but it counts as recent
                in_view.add(path)
                continue
            content = restore.read_file(path) if restore.read_file else None
            if content is None and u.id in results:
                content = results[u.id].content
            recent[path] = content or ""
        if len(recent) >= RECENT_FILES:
            break
    files = [(p, c) for p, c in recent.items() if c]
    # Each file's share is of every file the restore looked for, those left out below (or empty) too: a
    # replay knows only the files the live restore kept (nova.evaluation.recorded_run), and shares the
    # budget as the live run did only if the ones that did not fit count the same there.
    looked_for = sum(1 for p in recent if p not in in_view)
    per_file_chars = int(budget * 0.6 / max(1, looked_for) * 3)

    def render(chosen: list[tuple[str, str]]) -> str:
        sections: list[str] = []
        for path, content in chosen:
            clipped = content if len(content) <= per_file_chars else (
                content[:per_file_chars] + "\n[... cut; re-read the file for the rest]")
            sections.append(f"### {path}\n{clipped}")
        if restore.skills:
            sections.append("### Active skills\n" + "\n".join(f"- {n}: {proc}" for n, proc in restore.skills))
        if restore.tools:
            sections.append("### Tools available\n" + ", ".join(t.name for t in restore.tools))
        if not sections:
            return ""
        return (
            "[Restored context] Reconstructed after compaction, not the original messages; re-read any "
            "file or output through its path for exact content.\n\n" + "\n\n".join(sections)
        )

    text = render(files)
    while files and counter.count(text) > budget:
        files.pop()
        text = render(files)
    return text
