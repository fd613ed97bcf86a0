"""Summarizers for layer 2 (CMP-6): one protocol, a model summarizer and an extractive one.

`ModelSummarizer` asks the model. It sends the same system prompt, the same tool declarations and the
conversation as the model last saw it (the whole of it, `SummaryRequest.context`, not only the part being
folded), with the summary instruction as the final user message and the same cache breakpoints: the
request then starts with the prefix the provider cached on the previous call, and only the instruction
and the summary itself are paid at full price.

`ExtractiveSummarizer` needs no model: it keeps the user's messages verbatim (instructions come from
users, and losing them is the top complaint about compaction), the files read and changed, the commands
that failed with their errors, the agent's stated decisions and the last state, each with a pointer to
the raw record. It is what `nova demo`, replay and offline use run, and it is selectable in config.

Both are held to the same size cap by `compact`: a summary over the cap is rejected, never stored.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from nova.context.spill import shown_output
from nova.errors import SummaryError
from nova.history.tool_paths import ToolPaths, looks_like_path, paths_of
from nova.messages import Message, SummaryPart, TextPart, ToolResultPart, ToolUsePart, person_entries
from nova.model import CacheHints, ModelRequest, ToolSpec
from nova.providers.base import Provider, collect
from nova.tokens import TokenCounter

__all__ = [
    "SECTIONS",
    "USER_SECTION",
    "ExtractiveSummarizer",
    "LeftOut",
    "ModelSummarizer",
    "Summarizer",
    "SummaryError",
    "SummaryRequest",
    "UserSection",
    "build_user_section",
    "continuity_section",
    "is_user_message",
    "rejected_approaches",
    "render_transcript",
    "summarizer_for",
    "summary_instruction",
    "user_entries_in",
    "user_entries_of_summary",
    "user_section",
]

USER_SECTION = "User requests and constraints (verbatim)"
# CMP-6: seed 002's seven sections merged with seed 001's list; the user section comes first.
SECTIONS = (
    USER_SECTION,
    "Request and intent",
    "Goal and acceptance criteria",
    "Confirmed constraints and approvals",
    "Technical context",
    "Files and code",
    "Observed facts (with source pointers)",
    "Errors and fixes",
    "Failed attempts and why",
    "Decisions and rationale",
    "Current state",
    "Open questions and blockers",
    "Pending work",
    "Next step",
    "Pointers to raw history",
)
FILES_MODIFIED = "Files modified"
LAST_FAILURE = "Last failing command"
# The continuity section's bounds: a run that touched hundreds of files lists the newest. Where the
# summary's budget is small the rows give way further (`continuity_section`): these bounds matter where
# there is room, so a long run's early choices are not dropped for a count while the budget has space.
MAX_CARRIED_PATHS = 40
MAX_CARRIED_COMMAND = 2000
MAX_CARRIED_DECISIONS = 40
MAX_DECISION_CHARS = 300
DECISIONS = "Decisions made"
OPEN_TASKS = "Open tasks (the agent's own task list)"
FAILED_ATTEMPTS = "Failed attempts (newest first; the last one below)"
MAX_CARRIED_FAILURES = 24
MAX_CHANGED_BY = 160
# How many of the newest files modified say which shell command changed them.
MAX_CHANGED_BY_ROWS = 20
REJECTED = "Approaches the user rejected"
EARLIER_SUMMARY = "Earlier summary"
MAX_CARRIED_TASKS = 30
MAX_CARRIED_REJECTED = 12
_USER_ENTRY = re.compile(r"^<user-message id=\"([^\"]*)\">\n(.*?)\n</user-message>$", re.S | re.M)


@dataclass(frozen=True, kw_only=True)
class SummaryRequest:
    """Input of a summarizer: what to fold, what it may reuse, and how big the answer may be."""

    older: Sequence[Message]
    """The part of the working history being folded, as the model saw it (may hold an earlier summary)."""
    raw_older: Sequence[Message] = ()
    """The raw originals of everything the new summary covers (earlier summaries' messages included),
    when known: repeated compactions rebuild from raw events, not from a summary of a summary (CMP-10)."""
    system: str = ""
    tools: Sequence[ToolSpec] = ()
    context: Sequence[Message] = ()
    """The whole working history as the model last saw it (folded part first, then the kept tail), when
    known: a summarizer that reuses the provider's cache sends this, since the cache holds the prefix the
    last call wrote — a request ending at the folded part would usually miss it."""
    max_tokens: int = 8000
    focus: str = ""
    transcript_path: str = ""
    carried: str = ""
    """What `compact` writes into the summary itself besides the user's words (files modified, the last
    failing command with its error): the summarizer need not repeat it."""
    task_state: str = ""
    """Nova's task ledger as a section (goal, constraints, approvals, open items, evidence ids): what
    the summary must carry, given to the summarizer so the summary it writes passes the continuity check."""


@runtime_checkable
class Summarizer(Protocol):
    name: str

    @property
    def model_call(self) -> bool:
        """Whether a summary costs a model call (the receipt and the cost schedule price it): the
        extractive summarizer is Nova's own code and makes none; a wrapper makes what it wraps."""
        ...

    def summarize(self, request: SummaryRequest) -> str:
        """The summary text. Raise `SummaryError` (or anything) on failure."""
        ...


# -- shared helpers ----------------------------------------------------------------------------------
def is_user_message(message: Message) -> bool:
    """A message that is a person's words and nothing else a cut could shorten: it holds text a person
    typed (`nova.messages.person_entries`) and no tool result or summary. A person's words beside tool
    results are theirs all the same (`user_entries_in`); this only says the whole message is."""
    if message.has("tool_result") or message.has("summary"):
        return False
    return bool(person_entries(message))


def user_entries_in(message: Message) -> list[tuple[str, str]]:
    """(entry id, verbatim text) of each piece a person typed in `message`, wherever it sits: the one
    rule every compaction, the continuity check and the benchmarks use."""
    return person_entries(message)


def user_entries_of_summary(text: str) -> list[tuple[str, str]]:
    """(message id, verbatim text) of the user messages an earlier summary carried."""
    return [(mid, m.group(2)) for m in _USER_ENTRY.finditer(text) for mid in m.group(1).split(",")]


def render_user_entry(message_id: str, text: str) -> str:
    return f'<user-message id="{message_id}">\n{text}\n</user-message>'


def _part_lines(message: Message) -> Iterable[str]:
    for part in message.parts:
        if isinstance(part, TextPart | SummaryPart):
            yield part.text
        elif isinstance(part, ToolUsePart):
            yield f"(tool call {part.name} {json.dumps(dict(part.input), ensure_ascii=False)})"
        elif isinstance(part, ToolResultPart):
            yield f"(tool result{' error' if part.is_error else ''}) {part.content}"


def render_transcript(messages: Sequence[Message]) -> str:
    """CMP-6: `[role]: content` lines, for summarizers that do not reuse the cached conversation."""
    return "\n".join(f"[{m.role}]: " + "\n".join(_part_lines(m)) for m in messages)


def summary_instruction(*, max_tokens: int, focus: str = "", transcript_path: str = "", kept_messages: int = 0,
                        task_state: str = "", carried: str = "") -> str:
    """The instruction sent as the final user message of a model summary request. `kept_messages`: how
    many of the newest messages above stay in the context verbatim after the summary. `carried`: the
    rows Nova writes into the summary itself (files, open tasks, rejected approaches, decisions, failures):
    given to the model as the facts its sections must agree with, never to be repeated."""
    sections = "\n".join(f"## {s}" for s in SECTIONS)
    focus_line = f"\nGive extra attention to: {focus}\n" if focus else ""
    pointer = f" The full transcript is at {transcript_path}." if transcript_path else ""
    kept = (f" The last {kept_messages} messages above stay in the context word for word after the summary: "
            "summarize what comes before them and mention them only as far as needed to connect.")
    return (
        "Your context window is being compacted. Write a summary of the conversation so far that lets you "
        "continue the task without it. Do not call any tool; answer with the summary only, in Markdown, "
        f"under these headings, in this order:\n{sections}\n\n"
        f"Leave '{USER_SECTION}' empty: Nova copies the user's messages there itself, word for word. "
        "Keep file paths, commands, error messages and identifiers exact. "
        "Fold every still-relevant fact of an earlier summary into the new one. Mark what you inferred "
        f"as inferred. Stay under {max_tokens} tokens.{pointer}{kept if kept_messages > 0 else ''}{focus_line}"
        + (f"\nCopy this task ledger into the summary as it is, ids included:\n{task_state}\n" if task_state else "")
        + (f"\nNova adds these sections to the summary itself, exactly as below: do not repeat them, build on "
           "them — an approach listed as rejected by the user is never a decision or the next step:\n"
           f"{carried}\n" if carried else "")
    )


# -- the model summarizer ----------------------------------------------------------------------------
class ModelSummarizer:
    """Asks the model, reusing the cached prefix: same system, same tools, the conversation as sent."""

    name = "model"
    model_call = True

    def __init__(self, provider: Provider, *, model: str, reuse_cache: bool = True,
                 cache: CacheHints | None = None) -> None:
        self.provider = provider
        self.model = model
        self.reuse_cache = reuse_cache
        self.cache = cache or CacheHints(system=True, last_tool=True, last_user_message=True, first_message=True)
        """The agent's own breakpoints and cache key: without markers Anthropic reads nothing."""

    def build_request(self, request: SummaryRequest) -> ModelRequest:
        """The summary request: the conversation as last sent (so its prefix is byte-identical to the
        agent's previous request) plus the instruction as the final user message."""
        shown = list(request.context) or list(request.older)
        kept = max(0, len(shown) - len(request.older)) if request.context else 0
        instruction = summary_instruction(max_tokens=request.max_tokens, focus=request.focus,
                                          transcript_path=request.transcript_path, kept_messages=kept,
                                          task_state=request.task_state, carried=request.carried)
        if self.reuse_cache:
            messages = [*shown, Message.user(instruction, origin="summary_request")]
        else:
            messages = [Message.user(render_transcript(request.older) + "\n\n" + instruction)]
        return ModelRequest(
            model=self.model,
            system=request.system,
            messages=messages,
            tools=list(request.tools),
            max_output_tokens=max(256, request.max_tokens),
            cache=self.cache if self.reuse_cache else CacheHints(cache_key=self.cache.cache_key),
        )

    def summarize(self, request: SummaryRequest) -> str:
        model_request = self.build_request(request)
        response = collect(self.provider, model_request)
        text = response.message.text.strip()
        if not text:
            raise SummaryError("the model returned an empty summary")
        return text


# -- the extractive summarizer -----------------------------------------------------------------------
_RETURNCODE = re.compile(r"<returncode>(-?\d+)</returncode>")
_EXIT_CODE = re.compile(r"(?:exit code|exit status|returncode)[:= ]+(-?\d+)", re.I)
_DIFF_HEADER = re.compile(r"^(?:diff --git a/(\S+)|patching file (\S+)|\+\+\+ b/(\S+))", re.M)
# A choice the agent made, as opposed to narration of its next step ("Let me look at", "I need to find"):
# a model writes several of those per turn, and when they share one list with the choices, the choices of
# the first hour are gone after a few compactions (and "Let me check the tests." is no decision at all).
# A choice: a stated decision or alternative, a labelled approach or solution, or the agent saying which
# design it will use, keep, extend or switch to. Choices are few and are carried whole in the continuity
# section.
_CHOICE = re.compile(
    r"\b(?:decided|decision|decide to|instead of|rather than|go(?:ing)? with|opt(?:ed|ing)? for|chose|choose to|"
    r"switch(?:ing)? to|the (?:fix|solution|approach|plan) (?:is|will be)|root cause|"
    r"(?:I'll|I will|we'll|we will|let's|let us|let me|we should|I'm going to) "
    r"(?:reuse|extend|integrate|store|track|simplify|switch|design|go with)|"
    r"(?:just )?need to (?:track|use|store|keep|reuse))\b|"
    r"^\W*(?:approach|solution|key insight|key decision|decision|recommended(?: solution)?|fix|plan)\W{0,4}:", re.I)
# A person turning the agent's last proposal down ("no, ...", "don't ...", "it's a bad idea"): the choices
# stated since their previous message are carried as rejected, never as decisions.
_REJECTION = re.compile(
    r"^\s*(?:no\b|nope\b|don'?t\b|do not\b|not\b|never\b|stop\b|wrong\b|instead\b|that'?s (?:wrong|not)|"
    r"it'?s (?:a )?bad idea)|\bbad idea\b|\bnot acceptable\b|\bnot what I\b", re.I)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
# The agent's own task tools: the list each call writes whole (Claude Code TodoWrite, Gemini CLI
# write_todos, Codex update_plan), and Claude Code's task-by-task tools.
_TODO_TOOLS = ("todowrite", "write_todos", "update_plan")
_DONE = ("completed", "done", "cancelled", "canceled", "deleted")
_TASK_ID = re.compile(r"#(\d+)|\btask (\d+)\b", re.I)
# A tool result that says the person refused the call (Claude Code), or that it never ran (an interrupt,
# a resumed session's synthetic answer): neither is a failure of the command.
_REFUSED = ("The user doesn't want to proceed with this tool use",)
_NOT_RUN = ("[Request interrupted by user", "interrupted: the session stopped before this tool call")


def _command_of(call: ToolUsePart) -> str:
    for key in ("command", "cmd", "script"):
        value = call.input.get(key)
        if isinstance(value, str):
            return value
    return ""


def exit_code(result: ToolResultPart) -> int | None:
    """The exit code a tool result reports, wherever the tool put it: mini-swe-agent's `<returncode>` and
    Claude Code's `Exit code N` come first, Nova's bash reports `[exit code: N]` after the output, so the
    head and the end are both read (a long output puts the end far from the start). None when it reports
    none."""
    content = shown_output(result.content)  # a spilled result: its header first, then the output
    head, tail = content[:500], content[-500:]
    # Every compaction reads every result of the folded part: most name no code at all, and a plain
    # substring test says so far faster than the patterns do.
    named = _names_code(head), _names_code(tail)
    match = ((_RETURNCODE.search(content[:200]) or _EXIT_CODE.search(head)) if named[0] else None) or (
        (_last_match(_EXIT_CODE, tail) or _last_match(_RETURNCODE, content[-300:])) if named[1] else None)
    return int(match.group(1)) if match else None


def _names_code(text: str) -> bool:
    """Whether `text` holds a word every form `exit_code` reads contains (a case-blind pattern is ten
    times slower than this)."""
    low = text.lower()
    return "exit" in low or "returncode" in low


def _last_match(pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    matches = list(pattern.finditer(text))
    return matches[-1] if matches else None


def failure_code(result: ToolResultPart) -> int | None:
    """The failing exit code of a tool result; None if it passed. An error result that reports no code
    is -1 ("failed, no exit code"), never a guess."""
    code = exit_code(result)
    if code is not None:
        return code if code != 0 else None
    return -1 if result.is_error else None


# A line that only reports the exit code (Nova's bash, Claude Code): the code is carried on its own.
_CODE_LINE = re.compile(r"^\s*(?:\[exit code: -?\d+\]|\[killed by [^\]]*\]|exit code:? -?\d+)\s*$", re.I)


def error_lines(content: str, n: int = 3) -> list[str]:
    """The last non-empty lines of a tool output, the harness's tags (`<returncode>`, `<output_tail>`, ...)
    and its exit-code lines removed."""
    body = re.sub(r"<returncode>-?\d+</returncode>|</?[a-z_-]+>", "", content)
    lines = [line.rstrip() for line in body.splitlines() if line.strip() and not _CODE_LINE.match(line)]
    return lines[-n:]


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass
class _Facts:
    users: list[tuple[str, str]] = field(default_factory=list)
    """(entry id, text) of what a person typed, oldest first (`user_entries_in`)."""
    carried_users: list[tuple[str, str]] = field(default_factory=list)
    files_read: dict[str, str] = field(default_factory=dict)
    files_changed: dict[str, str] = field(default_factory=dict)
    """path -> id of the message that last changed it, oldest change first."""
    changed_by: dict[str, str] = field(default_factory=dict)
    """path -> the shell command that last changed it (when a shell command did)."""
    failures: list[tuple[str, str, int, list[str]]] = field(default_factory=list)
    choices: dict[str, str] = field(default_factory=dict)
    """The agent's stated choices (`_CHOICE`), oldest first, each once, with the message id."""
    rejected: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Choices the person rejected in their next message: sentence -> (its message id, their entry id)."""
    tasks: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    """The agent's own task list as it last wrote it: key -> (status, text, message id)."""
    last_assistant: tuple[str, str] = ("", "")
    last_call: tuple[str, str, str] = ("", "", "")
    earlier_summaries: list[tuple[str, str]] = field(default_factory=list)
    """(who wrote it, text) of each summary the folded part holds: "nova", or the recorded agent."""

    def open_tasks(self) -> list[tuple[str, str, str]]:
        return [task for task in self.tasks.values() if task[0].lower() not in _DONE]


# Every compaction reads the whole folded history again, and splitting shell commands is the dear part:
# the answer for each call is kept (by identity, the call held so its id cannot be reused), a bounded few.
_PATHS_SEEN: dict[int, tuple[ToolUsePart, ToolPaths]] = {}
_PATHS_KEPT = 8192


def _paths_of(call: ToolUsePart) -> ToolPaths:
    hit = _PATHS_SEEN.get(id(call))
    if hit is not None and hit[0] is call:
        return hit[1]
    if len(_PATHS_SEEN) >= _PATHS_KEPT:
        _PATHS_SEEN.pop(next(iter(_PATHS_SEEN)))
    found = _PATHS_SEEN[id(call)] = (call, paths_of(call))
    return found[1]


def _collect(messages: Sequence[Message]) -> _Facts:
    facts = _Facts()
    calls: dict[str, tuple[ToolUsePart, str]] = {}
    since: list[str] = []  # choices stated since the person's last words
    last_call: tuple[ToolUsePart, str, str] | None = None
    for m in messages:
        for entry in user_entries_in(m):
            facts.users.append(entry)
            if _REJECTION.search(entry[1]):
                for sentence in since:
                    facts.rejected[sentence] = (facts.choices.pop(sentence, m.id), entry[0])
            since = []
        for part in m.parts:
            if isinstance(part, SummaryPart):
                facts.carried_users.extend(user_entries_of_summary(part.text))
                source = "nova" if m.origin == "summary" else str((m.metadata.get("compaction") or {}).get("source")
                                                                    or "the recorded agent")
                facts.earlier_summaries.append((source, part.text))
                _carried_facts(part.text, facts)
            elif isinstance(part, ToolUsePart):
                calls[part.id] = (part, m.id)
                command = _command_of(part)
                touched = _paths_of(part)
                for p in touched.reads:
                    facts.files_read[p] = m.id
                for p in touched.writes:
                    facts.files_changed.pop(p, None)  # newest change last
                    facts.files_changed[p] = m.id
                    if command:
                        facts.changed_by[p] = command
                    else:
                        facts.changed_by.pop(p, None)
                _task_call(part, m.id, facts)
                last_call = (part, command, m.id)
            elif isinstance(part, ToolResultPart):
                for groups in _DIFF_HEADER.findall(part.content):
                    for p in groups:
                        if p and looks_like_path(p):
                            facts.files_changed.pop(p, None)
                            facts.files_changed[p] = m.id
                call, _ = calls.get(part.tool_use_id, (None, ""))
                if call is not None and call.name.lower() == "taskcreate":
                    _task_created(call, part, m.id, facts)
                if part.content.startswith(_REFUSED):
                    # The person refused this call: an approach turned down, not a failure of the command.
                    facts.rejected[f"the call {_clip(_what(call), MAX_DECISION_CHARS)}"] = (m.id, m.id)
                    continue
                if part.content.startswith(_NOT_RUN):
                    continue  # stopped before it ran: no failure of the command either
                code = failure_code(part)
                if code is not None:
                    facts.failures.append((_what(call), m.id, code, error_lines(part.content)))
        if m.role == "assistant" and m.text.strip():
            facts.last_assistant = (m.text.strip(), m.id)
            for sentence in _SENTENCE.split(m.text):
                sentence = sentence.strip()
                if len(sentence) <= 20 or sentence.endswith("?"):  # a question chooses nothing
                    continue
                if (_CHOICE.search(sentence) and sentence not in facts.rejected
                        and _CHOICE.search(_own_words(sentence, facts))):
                    facts.choices.setdefault(sentence, m.id)
                    since.append(sentence)
    if last_call is not None:
        call, command, message_id = last_call
        facts.last_call = (call.name, command or json.dumps(dict(call.input))[:300], message_id)
    for path in facts.files_changed:
        facts.files_read.pop(path, None)
    return facts


# A quotation long enough to be someone's sentence, not a name or a value ("use `x` instead of `None`").
_QUOTATION = re.compile(r'"[^"\n]{20,}"|\u201c[^\u201d\n]{20,}\u201d')
_QUOTE_MARKS = "\"'\u201c\u201d "
# The label a harness or the agent puts before its words (mini-swe-agent's "THOUGHT:").
_LABEL = re.compile(r"^[A-Z][A-Za-z ]{0,20}:\s*")


def _own_words(sentence: str, facts: _Facts) -> str:
    """What of `sentence` the agent said itself: the long quotations taken out, and nothing at all when
    the rest is a piece of what the person wrote. An agent that restates the task ("the user says:
    "... instead of the three examples ..."") chooses nothing; those echoes would otherwise fill the
    bounded list of choices and push the agent's real early decisions out of every later summary."""
    own = _QUOTATION.sub(" ", sentence).strip(_QUOTE_MARKS)
    words = " ".join(_LABEL.sub("", own).strip(_QUOTE_MARKS).split())
    if len(words) > 20:
        said = (" ".join(text.split()) for _, text in (*facts.users, *facts.carried_users))
        if any(words in text for text in said):
            return ""
    return own


def _what(call: ToolUsePart | None) -> str:
    """How a summary names a call that failed or was refused (named only then: most calls are neither)."""
    return (_command_of(call) or _call_line(call)) if call else "?"


def _call_line(call: ToolUsePart) -> str:
    """A call that is not a shell command, as one line: its name, the file it names, the other arguments."""
    touched = _paths_of(call)
    target = (touched.writes or touched.reads or ("",))[0]
    rest = {k: v for k, v in call.input.items() if v != target}
    return " ".join(x for x in (call.name, target, json.dumps(rest, ensure_ascii=False) if rest else "") if x)


def _task_call(call: ToolUsePart, message_id: str, facts: _Facts) -> None:
    name = call.name.lower()
    if name in _TODO_TOOLS:
        items = call.input.get("todos") or call.input.get("plan") or []
        facts.tasks = {}  # each call writes the whole list
        for item in items if isinstance(items, list) else ():
            if not isinstance(item, dict):
                continue
            text = str(item.get("content") or item.get("description") or item.get("step") or "").strip()
            if text:
                facts.tasks[text] = (str(item.get("status") or "pending"), text, message_id)
    elif name == "taskupdate":
        task_id = str(call.input.get("taskId") or call.input.get("id") or "")
        status = str(call.input.get("status") or "")
        if task_id in facts.tasks and status:
            _, text, _ = facts.tasks[task_id]
            facts.tasks[task_id] = (status, text, message_id)


def _task_created(call: ToolUsePart, result: ToolResultPart, message_id: str, facts: _Facts) -> None:
    subject = str(call.input.get("subject") or call.input.get("description") or "").strip()
    found = _TASK_ID.search(result.content)
    if subject and not result.is_error:
        key = next((g for g in found.groups() if g), call.id) if found else call.id
        facts.tasks[key] = ("pending", f"#{key} {subject}" if found else subject, message_id)


_CARRIED_ROW = re.compile(r"^- (.+) \(msg ([^)\s]+)\)$")
_CARRIED_FILE = re.compile(r"^- (.+?) \(msg ([^)\s]+)\)(?: by `(.*)`)?$")
_CARRIED_FAILURE = re.compile(r"^- `(.*)` (?:exited (-?\d+)|failed \(no exit code reported\)) \(msg ([^)\s]+)\)(?:: (.*))?$")
_CARRIED_TASK = re.compile(r"^- \[([^\]]+)\] (.+) \(msg ([^)\s]+)\)$")
_CARRIED_REJECTED = re.compile(r"^- rejected by the user \(msg ([^)\s]+)\): (.+) \(msg ([^)\s]+)\)$")


def _carried_facts(summary: str, facts: _Facts) -> None:
    """The continuity rows of an earlier Nova summary (files, tasks, choices, rejections): folded into the
    new one when the messages it stands for cannot be read back, so a fact survives any number of
    compactions. Rows the folded messages themselves give again are not overwritten."""
    section = ""
    carried_failures: list[tuple[str, str, int, list[str]]] = []
    for line in summary.splitlines():
        if line.startswith("## "):
            section = line[3:].strip()
            continue
        if section in (FAILED_ATTEMPTS, LAST_FAILURE):
            if (failure := _CARRIED_FAILURE.match(line)):
                code = int(failure.group(2)) if failure.group(2) is not None else -1
                carried_failures.append((failure.group(1), failure.group(3), code,
                                         [failure.group(4)] if failure.group(4) else []))
            elif line.startswith("    ") and carried_failures and section == LAST_FAILURE:
                carried_failures[-1][3].append(line.strip())
        elif section == FILES_MODIFIED and (row := _CARRIED_FILE.match(line)):
            if row.group(1) not in facts.files_changed:
                facts.files_changed[row.group(1)] = row.group(2)
                if row.group(3):
                    facts.changed_by[row.group(1)] = row.group(3)
        elif section == OPEN_TASKS and (task := _CARRIED_TASK.match(line)):
            facts.tasks.setdefault(task.group(2), (task.group(1), task.group(2), task.group(3)))
        elif section == REJECTED and (rejected := _CARRIED_REJECTED.match(line)):
            facts.rejected.setdefault(rejected.group(2), (rejected.group(3), rejected.group(1)))
        elif section == DECISIONS and (row := _CARRIED_ROW.match(line)):
            facts.choices.setdefault(row.group(1), row.group(2))
    # The rows are newest first; the facts keep failures oldest first, and those of the folded messages
    # (read after this summary) are newer still.
    facts.failures[:0] = carried_failures[::-1]


class ExtractiveSummarizer:
    """A structured summary assembled from the raw messages, no model involved.

    Sections are added in priority order until the token budget is spent (the user's messages verbatim
    are added by `compact` itself, see `build_user_section`), files changed, the latest failures with
    their errors, the last state, files read, decisions.
    """

    name = "extractive"
    model_call = False

    def __init__(self, counter: TokenCounter | None = None) -> None:
        from nova.tokens import HeuristicCounter

        self.counter: TokenCounter = counter or HeuristicCounter()

    def summarize(self, request: SummaryRequest) -> str:
        source = request.raw_older or request.older
        facts = _collect(source)
        budget = max(128, request.max_tokens - 32)
        out: list[str] = []
        used = 0

        def add(title: str, lines: list[str]) -> None:
            nonlocal used
            if not lines:
                return
            header = f"\n## {title}"
            more = "- (more in the raw transcript)"
            # The header and a possible "more" line are paid up front so the total never passes the cap.
            reserve = self.counter.count(header) + self.counter.count(more) + 2
            if used + reserve >= budget:
                return
            block = [header]
            spent = reserve
            for line in lines:
                cost = self.counter.count(line) + 1
                if used + spent + cost > budget:
                    block.append(more)
                    break
                block.append(line)
                spent += cost
            if len(block) > 1:
                out.extend(block)
                used += spent

        if request.task_state:
            # Nova's ledger first and whole: it is what the continuity check holds the summary to.
            out.append(request.task_state)
            used += self.counter.count(request.task_state) + 1
        if request.focus:
            add("Focus", [request.focus])
        if not request.carried:
            add("Files changed", [f"- {p} (msg {i})" for p, i in reversed(facts.files_changed.items())])
            add(OPEN_TASKS, [_task_row(t) for t in facts.open_tasks()])
            add(REJECTED, [_rejected_row(d, v) for d, v in reversed(facts.rejected.items())])
        # The failures are in the carried section when there is one (the last in full, the failed attempts
        # before it one row each).
        failures = [] if request.carried else facts.failures[-5:][::-1]
        add("Failed attempts and errors (latest first)", [
            f"- `{_clip(cmd, 400)}` {_exit_words(code)} (msg {mid})" + "".join(f"\n    {_clip(e, 300)}" for e in err)
            for cmd, mid, code, err in failures
        ])
        foreign = [(who, text) for who, text in facts.earlier_summaries if who != "nova"]
        for who, text in foreign[-1:]:
            # A summary the recorded agent wrote of messages Nova cannot read back: its own words, clipped,
            # are all there is of them.
            add(f"{EARLIER_SUMMARY} (written by {who}; the messages it stands for are not in this session)",
                [line for line in _strip_preamble(text).splitlines() if line.strip()])
        state: list[str] = []
        if facts.last_assistant[0]:
            state.append(f"- last assistant message (msg {facts.last_assistant[1]}): "
                         f"{_clip(facts.last_assistant[0], 600)}")
        if facts.last_call[0]:
            state.append(f"- last tool call (msg {facts.last_call[2]}): {facts.last_call[0]} "
                         f"{_clip(facts.last_call[1], 300)}")
        add("Current state", state)
        add("Files read", [f"- {p}" for p in list(reversed(facts.files_read))[:40]])
        if not request.carried:
            # The choices as stated, newest first (narration of next steps is no decision; the last state
            # above says where the work stopped).
            add("Decisions and rationale", [f"- {_clip(d, 240)} (msg {i})" for d, i in reversed(facts.choices.items())])
        pointer = request.transcript_path or "the session transcript"
        add("Pointers to raw history", [f"- {len(source)} earlier messages are in {pointer}; "
                                        "message ids above point into it."])
        return "\n".join(out)


@dataclass(frozen=True, slots=True)
class LeftOut:
    """A user message the summary does not carry whole: its ids (identical texts share an entry), its
    size and what of it the summary kept."""

    ids: tuple[str, ...]
    tokens: int
    kept: int
    reason: str

    def to_dict(self) -> dict[str, object]:
        return {"ids": list(self.ids), "tokens": self.tokens, "kept": self.kept, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class UserSection:
    text: str
    left_out: tuple[LeftOut, ...] = ()


# An entry that cannot be carried whole keeps this much of its head, with a pointer to the rest.
SHORT_ENTRY_TOKENS = 60


def _add_user_entries(entries: list[tuple[str, str]], out: list[str], budget: int, counter: TokenCounter
                      ) -> list[LeftOut]:
    """Add the user entries verbatim, the first and then the newest in priority; identical texts (a
    harness repeating the same notice) are written once with all their ids. When they do not all fit, the
    oldest are shortened — their head kept, a pointer to the transcript for the rest — and only when even
    that does not fit is an entry named by a pointer alone. Returns what was not carried whole."""
    if not entries:
        out.append("(none)")
        return []
    grouped: dict[str, list[str]] = {}
    for mid, text in entries:
        grouped.setdefault(text, []).append(mid)
    unique = [(",".join(ids), text) for text, ids in grouped.items()]
    costs = [counter.count(t) + 12 for _, t in unique]
    chosen: set[int] = set()
    used = 0
    order = [0, *range(len(unique) - 1, 0, -1)]
    for i in order:
        if used + costs[i] <= budget:
            chosen.add(i)
            used += costs[i]
    room_note = f"the user's words are carried whole up to {budget:,} tokens in a compaction summary"
    short: dict[int, str] = {}
    pointer_cost = 24
    # What the entries left out will cost as pointers is held back first, so shortening never crowds one out.
    spare = budget - used - pointer_cost * (len(unique) - len(chosen))
    for i in order:
        if i in chosen or i == 0:
            continue
        _, text = unique[i]
        head = _head(text, min(SHORT_ENTRY_TOKENS, spare + pointer_cost - 30), counter)
        cost = counter.count(head) + 30
        if head and cost - pointer_cost <= spare:
            short[i] = head
            spare -= cost - pointer_cost
    left: list[LeftOut] = []
    for i, (mid, text) in enumerate(unique):
        ids = tuple(mid.split(","))
        if i in chosen:
            out.append(render_user_entry(mid, text))
        elif i == 0:
            # A first request larger than the whole budget: its head verbatim, the rest by pointer.
            room = int(len(text) * budget / max(costs[0], 1))
            while room > 200 and counter.count(text[:room]) + 40 > budget:
                room = int(room * 0.9)
            out.append(render_user_entry(mid, text[:room] + f"\n[... {len(text) - room} more chars in msg {mid}]"))
            left.append(LeftOut(ids, costs[0] - 12, counter.count(text[:room]),
                                f"the first request alone is over its room ({room_note}); its head is kept"))
        elif i in short:
            head = short[i]
            out.append(render_user_entry(mid, f"{head}\n[... {len(text) - len(head)} more chars in msg {mid} of the "
                                              "transcript]"))
            left.append(LeftOut(ids, costs[i] - 12, counter.count(head),
                                f"shortened, its head kept ({room_note}; the first request and the newest come first)"))
        else:
            out.append(f"(user message {mid}, {len(text)} chars: not repeated here, see the transcript)")
            left.append(LeftOut(ids, costs[i] - 12, 0,
                                f"no room left for it ({room_note}; the first request and the newest come first)"))
    return left


def _head(text: str, tokens: int, counter: TokenCounter) -> str:
    """The longest head of `text` within `tokens`, cut at a word boundary ("" when none is worth it)."""
    if tokens < 16:
        return ""
    room = min(len(text), tokens * 4)
    while room > 40 and counter.count(text[:room]) > tokens:
        room = int(room * 0.85)
    if room <= 40:
        return ""
    cut = text[:room]
    return cut.rsplit(" ", 1)[0] if " " in cut[room // 2:] else cut


def _carried_users(messages: Sequence[Message]) -> list[tuple[str, str]]:
    return [entry for m in messages for p in m.parts if isinstance(p, SummaryPart)
            for entry in user_entries_of_summary(p.text)]


def user_entries(older: Sequence[Message], raw_older: Sequence[Message] = ()) -> list[tuple[str, str]]:
    """(entry id, verbatim text) of everything a person typed in the folded part, oldest first: from the raw
    originals when known, plus what earlier summaries carried that the raw set does not have."""
    source = raw_older or older
    # In the order they were written: an earlier summary's entries where the summary stands, each
    # message's own (beside tool results, merged, queued: `user_entries_in`) where it stands.
    ordered = [entry for m in source
               for entry in (*_carried_users([m]), *user_entries_in(m))]
    known = {mid for mid, _ in ordered}
    carried = [(i, t) for i, t in _carried_users(older) if i not in known] if raw_older else []
    seen: set[str] = set()
    result = []
    for mid, text in [*carried, *ordered]:
        if mid not in seen:
            seen.add(mid)
            result.append((mid, text))
    return result


def build_user_section(
    older: Sequence[Message], raw_older: Sequence[Message] = (), *, budget: int, counter: TokenCounter
) -> str:
    """The summary's first section, built deterministically (never by a model): the user's messages
    verbatim, the first request and the newest ones first in priority, up to `budget` tokens; what does
    not fit is named by id so it can be read back from the transcript."""
    return user_section(older, raw_older, budget=budget, counter=counter).text


def user_section(
    older: Sequence[Message], raw_older: Sequence[Message] = (), *, budget: int, counter: TokenCounter,
    opening: str = "",
) -> UserSection:
    """`build_user_section` with the user messages it could not carry whole (for the manifest). `opening`:
    the id of the opening message a compaction keeps in place ahead of the summary, which the section
    points to instead of copying."""
    out = [f"## {USER_SECTION}"]
    if opening:
        out.append(f"- msg {opening}: the opening request, kept word for word as the first message above "
                   "this summary")
    entries = user_entries(older, raw_older)
    left = _add_user_entries(entries, out, budget, counter) if entries or not opening else []
    return UserSection("\n".join(out), tuple(left))


def _newest_first(title: str, rows: list[str], *, limit: int, rest: str) -> list[str]:
    """A section of the newest `limit` rows (given oldest first), saying how many more the transcript has."""
    if not rows:
        return []
    newest = rows[::-1]
    more = [f"- ... {len(newest) - limit} {rest}"] if len(newest) > limit else []
    return [f"## {title}", *newest[:limit], *more]


def _exit_words(code: int) -> str:
    return "failed (no exit code reported)" if code == -1 else f"exited {code}"


def _task_row(task: tuple[str, str, str]) -> str:
    status, text, message_id = task
    return f"- [{status}] {_clip(text, MAX_DECISION_CHARS)} (msg {message_id})"


def _rejected_row(decision: str, where: tuple[str, str]) -> str:
    said, user_entry = where
    return f"- rejected by the user (msg {user_entry}): {_clip(decision, MAX_DECISION_CHARS)} (msg {said})"


def _strip_preamble(text: str) -> str:
    """A recorded summary without the harness's own first line ("This session is being continued...")."""
    first, _, rest = text.partition("\n")
    return rest if rest and "continued from a previous conversation" in first else text


def rejected_approaches(messages: Sequence[Message]) -> list[str]:
    """The choices the agent stated that the person turned down in their next message, oldest first."""
    return list(_collect(messages).rejected)


def continuity_section(messages: Sequence[Message], *, max_paths: int = MAX_CARRIED_PATHS,
                       budget: int | None = None, counter: TokenCounter | None = None) -> str:
    """The part of the continuity floor `compact` writes itself, beside the user's words: every file the
    folded part modified (newest first), the agent's open tasks as its own task tools last wrote them,
    the approaches the person rejected, the choices the agent stated (newest first) and its last failing
    command with its real exit code and the end of its error, exact. No summary cap may drop them (a small
    window's summary body has room for little else); "" when there are none. Repeated compactions rebuild
    it from the raw messages (or from the rows of the earlier summary when those cannot be read back), so a
    choice made early stays as long as the bounds allow, however many compactions follow.

    Earlier failures are listed too, one row per distinct error (the failed attempts that led here), and
    the newest files changed by a short shell command say which. With a `budget` (tokens, by `counter`),
    the rows give way oldest first — the commands beside the files, then failures, choices, rejections
    and tasks, each to a few and then further — while the files modified never do (`max_paths` bounds
    them); each section says how many more the transcript has."""
    facts = _collect(messages)
    limits = {"files": max_paths, "tasks": MAX_CARRIED_TASKS, "rejected": MAX_CARRIED_REJECTED,
              "choices": MAX_CARRIED_DECISIONS, "failures": MAX_CARRIED_FAILURES, "changed_by": MAX_CHANGED_BY_ROWS}
    earlier = _distinct_failures(facts.failures[:-1])

    def file_row(path: str, message_id: str, index: int, count: int) -> str:
        how = facts.changed_by.get(path, "")
        # The newest rows say how the file was changed, when a short shell command changed it.
        shown = f" by `{_clip(' '.join(how.split()), MAX_CHANGED_BY)}`" if how and count - index <= limits["changed_by"] else ""
        return f"- {path} (msg {message_id}){shown}"

    def render() -> str:
        out: list[str] = []
        changed = list(facts.files_changed.items())
        out += _newest_first(FILES_MODIFIED, [file_row(p, i, k, len(changed)) for k, (p, i) in enumerate(changed)],
                             limit=limits["files"], rest="more in the transcript")
        tasks = [_task_row(t) for t in facts.open_tasks()][::-1]  # in the list's own order
        out += _newest_first(OPEN_TASKS, tasks, limit=limits["tasks"], rest="more in the transcript")
        out += _newest_first(REJECTED, [_rejected_row(d, w) for d, w in facts.rejected.items()],
                             limit=limits["rejected"], rest="earlier ones in the transcript")
        out += _newest_first(DECISIONS, [f"- {_clip(d, MAX_DECISION_CHARS)} (msg {i})" for d, i in facts.choices.items()],
                             limit=limits["choices"], rest="earlier ones in the transcript")
        out += _newest_first(FAILED_ATTEMPTS, [
            f"- `{_clip(' '.join(cmd.split()), 200)}` {_exit_words(code)} (msg {mid})" + (f": {_clip(err[-1], 240)}" if err else "")
            for cmd, mid, code, err in earlier], limit=limits["failures"], rest="earlier ones in the transcript")
        if facts.failures:
            command, mid, code, errors = facts.failures[-1]
            out.append(f"## {LAST_FAILURE}")
            out.append(f"- `{_clip(command, MAX_CARRIED_COMMAND)}` {_exit_words(code)} (msg {mid})"
                       + "".join(f"\n    {_clip(e, 300)}" for e in errors))
        return "\n".join(out)

    text = render()
    if budget is None:
        return text
    sizer = counter or _default_counter()
    floors = (("changed_by", 0), ("failures", 4), ("choices", 4), ("rejected", 4), ("tasks", 10), ("failures", 0),
              ("choices", 0), ("rejected", 0))
    for key, least in floors:
        while sizer.count(text) > budget and limits[key] > least:
            limits[key] = max(least, limits[key] // 2 if limits[key] > 4 else limits[key] - 1)
            text = render()
    return text


def _distinct_failures(failures: list[tuple[str, str, int, list[str]]]) -> list[tuple[str, str, int, list[str]]]:
    """The failures with a different last error line each, the newest of each kept, oldest first."""
    newest: dict[str, tuple[str, str, int, list[str]]] = {}
    for failure in failures:
        key = failure[3][-1] if failure[3] else failure[0]
        newest.pop(key, None)
        newest[key] = failure
    return list(newest.values())


def _default_counter() -> TokenCounter:
    from nova.tokens import HeuristicCounter

    return HeuristicCounter()


def summarizer_for(
    choice: str, *, provider: Provider | None, model: str, counter: TokenCounter | None = None,
    cache: CacheHints | None = None,
) -> Summarizer:
    """The summarizer the `compaction.summarizer` setting asks for: `model`, `extractive`, or `auto`
    (the model when there is a real provider; the offline demo model gets the extractive one). `cache`
    is the agent's own breakpoints and cache key, so a model summary reads the agent's cached prefix."""
    use_model = choice == "model" or (choice == "auto" and provider is not None and provider.name != "demo")
    if use_model and provider is not None:
        return ModelSummarizer(provider, model=model, cache=cache)
    return ExtractiveSummarizer(counter)
