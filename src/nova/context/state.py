"""Canonical task state (CTX-6, SES-6): goal, acceptance criteria, constraints, approvals, open items,
evidence and the active plan, kept in the session store and written only by deterministic code.

Who may write what:

- The user, through commands: `/goal TEXT`, `/constraint TEXT`, `/approve ACTION`, `/done ITEM`
  (`apply_command`), and by confirming an imperative rule Nova detected in one of their messages
  ("never …", "do not …", "only …"; `detect_imperatives` finds them, `confirm_constraint` stores one).
- Verified tool results: "tests pass" is recorded only from a test command's real exit code
  (`record_test_run`), bound to a hash of the workspace at that moment; when files change the evidence
  reads as stale (`evidence_status`).
- The model never writes here. It may *propose* an update (`validate_proposal`): open items and plan
  steps are accepted, anything touching constraints, approvals, goal or evidence is refused, because
  a model's words never change canonical state.

Constraints that name a gated action (merge, push, deploy, …) also become deny rules for the
execution layer (`deny_rules`), until the user approves that action: permissions take effect where
tools run, not when the model has read a message (seed 001 §5, §6).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Literal

from nova.errors import CommandError, TaskStateConflict
from nova.sessions.recorder import TaskStateSource
from nova.sessions.store import StoredTaskState

__all__ = [
    "GATED_ACTIONS",
    "PINNED_HEADER",
    "TASK_STATE_COMMANDS",
    "Constraint",
    "Evidence",
    "MemoryStateSource",
    "ProposalResult",
    "TaskState",
    "TaskStateStore",
    "add_constraint",
    "apply_command",
    "baseline_items",
    "confirm_constraint",
    "deny_rules",
    "detect_imperatives",
    "evidence_status",
    "is_test_command",
    "propose_from_message",
    "record_test_run",
    "render_pinned",
    "validate_proposal",
    "workspace_hash",
]

# An action the user must approve before it runs, and the permission rules that stop it until then.
GATED_ACTIONS: Mapping[str, tuple[str, ...]] = {
    "merge": ("bash(git merge*)", "bash(git pull*)", "bash(gh pr merge*)"),
    "push": ("bash(git push*)",),
    "rebase": ("bash(git rebase*)",),
    "deploy": ("bash(*deploy*)",),
    "delete branch": ("bash(git branch -D*)", "bash(git branch -d*)", "bash(git push * --delete*)"),
    "reset": ("bash(git reset --hard*)",),
}
_ACTION_WORDS: Mapping[str, tuple[str, ...]] = {
    "merge": ("merge", "merging", "merged"),
    "push": ("push", "pushing", "pushed"),
    "rebase": ("rebase", "rebasing"),
    "deploy": ("deploy", "deploying", "deployment", "release to prod"),
    "delete branch": ("delete the branch", "delete branch", "deleting the branch"),
    "reset": ("reset --hard", "hard reset"),
}
_NEGATION = re.compile(r"\b(?:not|never|no|don't|do not|must not|mustn't|without)\b", re.IGNORECASE)

TEST_COMMANDS = re.compile(
    r"(?:^|[\s;&|(/])(?:python\d*(?:\.\d+)? -m pytest|pytest|py\.test|tox|nox|npm (?:run )?test|yarn test|"
    r"pnpm test|go test|cargo test|make (?:test|check)|mvn test|gradle test|\./gradlew test|"
    r"python\d*(?:\.\d+)? -m unittest|ctest|phpunit|rspec|bundle exec rspec)(?:\s|$)"
)

Origin = Literal["user", "command", "confirmed", "policy", "tool"]


@dataclass(frozen=True, kw_only=True)
class Constraint:
    id: str
    text: str
    origin: Origin = "command"
    source: str = ""
    """Where it came from: `/constraint`, a message id, a policy file."""
    created_at: float = 0.0


@dataclass(frozen=True, kw_only=True)
class Evidence:
    """A verified fact: what ran, its real exit code, and the workspace it ran against."""

    id: str
    claim: str
    """`tests pass` or `tests fail`."""
    command: str
    exit_code: int
    workspace: str
    """`workspace_hash` when it ran; the evidence is stale once the workspace hash differs."""
    source: str = ""
    """A pointer to the raw record: the tool_use id of the run."""
    recorded_at: float = 0.0


@dataclass(frozen=True, kw_only=True)
class TaskState:
    goal: str = ""
    acceptance: tuple[str, ...] = ()
    constraints: tuple[Constraint, ...] = ()
    approvals: tuple[str, ...] = ()
    open_items: tuple[str, ...] = ()
    plan: tuple[str, ...] = ()
    evidence: tuple[Evidence, ...] = ()
    pending: tuple[Constraint, ...] = ()
    """Imperative rules detected in the user's messages, waiting for the user to confirm them."""
    version: int = 0

    @property
    def empty(self) -> bool:
        return not (self.goal or self.acceptance or self.constraints or self.approvals or self.open_items
                    or self.plan or self.evidence)

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape the session store keeps (lists, not tuples)."""
        data: dict[str, Any] = json.loads(json.dumps(asdict(self)))
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> TaskState:
        if not data:
            return cls()

        def strings(key: str) -> tuple[str, ...]:
            return tuple(str(v) for v in data.get(key, ()) or ())

        def constraints(key: str) -> tuple[Constraint, ...]:
            return tuple(Constraint(**{k: v for k, v in c.items() if k in _CONSTRAINT_FIELDS})
                         for c in data.get(key, ()) or () if isinstance(c, Mapping))

        return cls(
            goal=str(data.get("goal", "")),
            acceptance=strings("acceptance"),
            constraints=constraints("constraints"),
            approvals=strings("approvals"),
            open_items=strings("open_items"),
            plan=strings("plan"),
            evidence=tuple(Evidence(**{k: v for k, v in e.items() if k in _EVIDENCE_FIELDS})
                           for e in data.get("evidence", ()) or () if isinstance(e, Mapping)),
            pending=constraints("pending"),
            version=int(data.get("version", 0)),
        )


_CONSTRAINT_FIELDS = frozenset(Constraint.__dataclass_fields__)
_EVIDENCE_FIELDS = frozenset(Evidence.__dataclass_fields__)


# Each failed attempt means another writer's change went in, so running out takes that many writers
# racing on one session at once; then the caller hears of it rather than spinning.
_UPDATE_ATTEMPTS = 100


class TaskStateStore:
    """Reads and writes one session's `TaskState` through the session store. Every write bumps the
    version, which the manifest reports as the pinned segment's version.

    Task state is written from the session's worker (test evidence, rules noticed in a request), the
    TUI and the server's request threads (the user's commands), so a change goes through `update`: it
    is applied to the newest state and written only if nobody wrote in between (compare-and-set on the
    version); if someone did, the state is read again and the change applied again. No update is lost,
    between threads or between processes sharing the store.

    The newest state read or written is kept for `load`: the compiler reads it on every call, possibly
    from another thread than the one that owns the store's connection."""

    def __init__(self, source: TaskStateSource) -> None:
        self.source = source
        self._state: TaskState | None = None
        self._lock = threading.Lock()  # guards `_state` only; never held while the store is called

    def load(self) -> TaskState:
        state = self._state
        return state if state is not None else self._read()

    def save(self, state: TaskState) -> TaskState:
        """Write `state` (as read at `state.version`) as the next version. If another writer got there
        first, nothing is written and `TaskStateConflict` is raised: a state computed from an older one
        would undo their change. `update` handles that by itself."""
        saved = replace(state, version=state.version + 1)
        self.source.put_task_state(saved.to_dict(), expected_version=state.version)
        self._keep(saved)
        return saved

    def update(self, change: Callable[[TaskState], TaskState]) -> TaskState:
        """Apply `change` to the newest state and write the result; returns what was written. `change`
        runs again on a fresher state whenever another writer got in first, so it must only compute
        (no side effects). Returning the state it was given writes nothing."""
        state = self.load()
        for attempt in range(1, _UPDATE_ATTEMPTS + 1):
            changed = change(state)
            if changed is state:
                return state
            try:
                return self.save(changed)
            except TaskStateConflict:
                if attempt == _UPDATE_ATTEMPTS:
                    raise
                state = self._read()
        raise AssertionError("unreachable")

    def _read(self) -> TaskState:
        stored = self.source.get_versioned_task_state()
        if stored is None:
            return self._keep(TaskState())
        # The store's version is the one a write is checked against; the copy inside the JSON can lag
        # behind it when something other than this class wrote the state.
        return self._keep(replace(TaskState.from_dict(stored.state), version=stored.version))

    def _keep(self, state: TaskState) -> TaskState:
        """Keep the newer of `state` and the kept one (another thread may have kept a newer one while
        this one talked to the store) and return it."""
        with self._lock:
            if self._state is None or state.version >= self._state.version:
                self._state = state
            return self._state


class MemoryStateSource(TaskStateSource):
    """An in-memory `TaskStateSource` (tests, replay, sessions without a store), with the same
    compare-and-set as the session store."""

    def __init__(self, state: Mapping[str, Any] | None = None) -> None:
        self._lock = threading.Lock()
        self._state: dict[str, Any] | None = dict(state) if state else None
        self._version = int(self._state.get("version", 0)) if self._state else 0

    def get_task_state(self) -> dict[str, Any] | None:
        with self._lock:
            return dict(self._state) if self._state is not None else None

    def get_versioned_task_state(self) -> StoredTaskState | None:
        with self._lock:
            return StoredTaskState(state=dict(self._state), version=self._version) if self._state is not None else None

    def put_task_state(self, state: Mapping[str, Any], *, expected_version: int | None = None) -> int:
        with self._lock:
            if expected_version is not None and expected_version != self._version:
                raise TaskStateConflict("memory", expected_version)
            self._state = dict(state)
            self._version += 1
            return self._version


def _item_id(prefix: str, text: str) -> str:
    return f"{prefix}-{hashlib.sha256(text.encode('utf-8')).hexdigest()[:8]}"


# -- user commands ---------------------------------------------------------------------------------
def apply_command(state: TaskState, line: str, *, now: float | None = None) -> TaskState:
    """`/goal`, `/accept`, `/constraint`, `/approve`, `/revoke`, `/open`, `/done`, `/plan`, `/confirm N`.
    Raises `CommandError` for anything else: the caller shows the user the message."""
    command, _, arg = line.strip().partition(" ")
    arg = arg.strip()
    when = time.time() if now is None else now
    if command not in _COMMANDS:
        raise CommandError(f"unknown task-state command {command!r}; one of {', '.join(sorted(_COMMANDS))}")
    if not arg and command != "/confirm":
        raise CommandError(f"{command} needs a text")
    if command == "/goal":
        return replace(state, goal=arg)
    if command == "/accept":
        return replace(state, acceptance=_add(state.acceptance, arg))
    if command == "/constraint":
        return add_constraint(state, arg, origin="command", source="/constraint", now=when)
    if command == "/approve":
        return replace(state, approvals=_add(state.approvals, arg))
    if command == "/revoke":
        return replace(state, approvals=tuple(a for a in state.approvals if a != arg))
    if command == "/open":
        return replace(state, open_items=_add(state.open_items, arg))
    if command == "/done":
        return replace(state, open_items=tuple(i for i in state.open_items if i != arg))
    if command == "/plan":
        return replace(state, plan=tuple(s.strip() for s in arg.split(";") if s.strip()))
    if arg and not arg.isdigit():
        raise CommandError(f"/confirm takes the number of a pending rule, not {arg!r}")
    return confirm_constraint(state, int(arg) if arg else 1, now=when)


TASK_STATE_COMMANDS = _COMMANDS = frozenset({"/goal", "/accept", "/constraint", "/approve", "/revoke", "/open", "/done", "/plan",
                       "/confirm"})


def _add(items: tuple[str, ...], item: str) -> tuple[str, ...]:
    return items if item in items else (*items, item)


def add_constraint(state: TaskState, text: str, *, origin: Origin, source: str, now: float = 0.0) -> TaskState:
    if any(c.text == text for c in state.constraints):
        return state
    constraint = Constraint(id=_item_id("c", text), text=text, origin=origin, source=source, created_at=now)
    return replace(state, constraints=(*state.constraints, constraint))


# -- imperative rules in the user's messages -------------------------------------------------------
_IMPERATIVE = re.compile(
    r"(?:^|(?<=[.!?;:\n]))\s*((?:please\s+)?(?:never|do not|don't|only|always|must not|you must not)\b[^.!?;\n]*)",
    re.IGNORECASE,
)


def detect_imperatives(text: str) -> list[str]:
    """Sentences of a user message that read as standing rules ("never …", "do not …", "only …").
    They are candidates: nothing is stored until the user confirms one."""
    found: list[str] = []
    for match in _IMPERATIVE.finditer(text):
        sentence = " ".join(match.group(1).split())
        if len(sentence.split()) >= 2 and sentence not in found:
            found.append(sentence)
    return found


def propose_from_message(state: TaskState, text: str, *, message_id: str) -> TaskState:
    """Queue the imperative rules of a user message for confirmation (`/confirm N`)."""
    pending = list(state.pending)
    known = {c.text for c in (*state.constraints, *pending)}
    for sentence in detect_imperatives(text):
        if sentence not in known:
            pending.append(Constraint(id=_item_id("c", sentence), text=sentence, origin="confirmed",
                                      source=f"message:{message_id}"))
    return replace(state, pending=tuple(pending))


def confirm_constraint(state: TaskState, number: int, *, now: float = 0.0) -> TaskState:
    """The user confirmed pending rule `number` (1-based): it becomes a constraint."""
    if not 1 <= number <= len(state.pending):
        raise CommandError(f"no pending rule {number}; there are {len(state.pending)}")
    chosen = state.pending[number - 1]
    rest = tuple(c for i, c in enumerate(state.pending) if i != number - 1)
    state = add_constraint(replace(state, pending=rest), chosen.text, origin="confirmed", source=chosen.source,
                           now=now)
    return state


# -- gated actions → the execution layer -----------------------------------------------------------
def _actions_named(text: str) -> list[str]:
    lowered = text.lower()
    return [action for action, words in _ACTION_WORDS.items() if any(w in lowered for w in words)]


def _approved(state: TaskState, action: str) -> bool:
    return any(action in a.lower() and not _NEGATION.search(a) for a in state.approvals)


def deny_rules(state: TaskState) -> list[str]:
    """Permission deny rules derived from constraints that forbid a gated action ("do not merge",
    "merge not approved"), unless the user has since approved that action (`/approve merge`)."""
    rules: list[str] = []
    for constraint in state.constraints:
        if not _NEGATION.search(constraint.text):
            continue
        for action in _actions_named(constraint.text):
            if not _approved(state, action):
                rules.extend(r for r in GATED_ACTIONS[action] if r not in rules)
    return rules


# -- verified evidence -----------------------------------------------------------------------------
_SKIP_DIRS = frozenset({".git", ".hg", ".svn", ".venv", "venv", "node_modules", "__pycache__", ".mypy_cache",
                        ".pytest_cache", ".ruff_cache", ".tox", ".nova", "dist", "build"})
MAX_HASHED_FILES = 20_000


def workspace_hash(root: Path) -> str:
    """A hash of the workspace's files (relative path, size, mtime): any edit changes it. Bounded to
    `MAX_HASHED_FILES` files in sorted walk order, so a huge tree costs a bounded scan."""
    digest = hashlib.sha256()
    seen = 0
    for directory, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        for name in sorted(files):
            path = Path(directory) / name
            try:
                stat = path.stat()
            except OSError:
                continue
            rel = path.relative_to(root).as_posix()
            digest.update(f"{rel}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
            seen += 1
            if seen >= MAX_HASHED_FILES:
                return "ws-" + digest.hexdigest()[:16]
    return "ws-" + digest.hexdigest()[:16]


def is_test_command(command: str) -> bool:
    return TEST_COMMANDS.search(" " + command.strip()) is not None


def record_test_run(state: TaskState, *, command: str, exit_code: int | None, workspace: str, source: str = "",
                    now: float = 0.0) -> TaskState:
    """Record a test command's real result. Only a real exit code counts: None (killed, timed out) or
    a command that is not a test command records nothing. Replaces earlier test evidence."""
    if exit_code is None or not is_test_command(command):
        return state
    claim = "tests pass" if exit_code == 0 else "tests fail"
    evidence = Evidence(id=_item_id("e", f"{command}\0{workspace}\0{source}"), claim=claim, command=command,
                        exit_code=exit_code, workspace=workspace, source=source, recorded_at=now)
    kept = tuple(e for e in state.evidence if e.claim not in ("tests pass", "tests fail"))
    return replace(state, evidence=(*kept, evidence))


def evidence_status(evidence: Evidence, current_workspace: str | None) -> Literal["fresh", "stale", "unknown"]:
    if current_workspace is None:
        return "unknown"
    return "fresh" if evidence.workspace == current_workspace else "stale"


# -- model proposals -------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class ProposalResult:
    state: TaskState
    accepted: tuple[str, ...] = ()
    refused: tuple[str, ...] = ()


_MODEL_WRITABLE = frozenset({"open_items", "plan", "done"})


def validate_proposal(state: TaskState, proposal: Mapping[str, Any]) -> ProposalResult:
    """A model's proposed update, checked field by field. Open items and plan steps are working notes
    and are accepted; goal, constraints, approvals, acceptance criteria and evidence belong to the user
    and to verified tools, so proposals touching them are refused with the reason."""
    accepted: list[str] = []
    refused: list[str] = []
    new = state
    for key in sorted(proposal):
        value = proposal[key]
        if key not in _MODEL_WRITABLE:
            refused.append(f"{key}: only the user or a verified tool result may change it")
            continue
        items = [str(v).strip() for v in (value if isinstance(value, list | tuple) else [value]) if str(v).strip()]
        if not items:
            refused.append(f"{key}: empty")
            continue
        if key == "open_items":
            for item in items:
                new = replace(new, open_items=_add(new.open_items, item))
        elif key == "done":
            new = replace(new, open_items=tuple(i for i in new.open_items if i not in items))
        else:
            new = replace(new, plan=tuple(items))
        accepted.append(key)
    return ProposalResult(state=new, accepted=tuple(accepted), refused=tuple(refused))


# -- the pinned segment ----------------------------------------------------------------------------
PINNED_HEADER = "[Task state — pinned, maintained by Nova from the user's commands and verified results]"


def render_pinned(state: TaskState, *, workspace: str | None = None) -> str:
    """The always-present task-state block. Deterministic: same state (and workspace hash) → same bytes.
    Empty string when there is nothing to pin."""
    if state.empty:
        return ""
    lines = [PINNED_HEADER]
    if state.goal:
        lines.append(f"Goal: {state.goal}")
    lines.extend(f"Acceptance: {a}" for a in state.acceptance)
    lines.extend(f"Constraint [{c.id}] ({c.origin}): {c.text}" for c in state.constraints)
    lines.extend(f"Approved: {a}" for a in state.approvals)
    blocked = sorted({action for c in state.constraints if _NEGATION.search(c.text)
                      for action in _actions_named(c.text) if not _approved(state, action)})
    lines.extend(f"Not approved: {action} (refused by the execution layer until the user approves it)"
                 for action in blocked)
    lines.extend(f"Open: {i}" for i in state.open_items)
    if state.plan:
        lines.append("Plan: " + " → ".join(state.plan))
    for e in state.evidence:
        status = evidence_status(e, workspace)
        note = "" if status == "fresh" else f" [{status}: files changed since, re-run to confirm]"
        lines.append(f"Evidence [{e.id}]: {e.claim} (`{e.command}` exit {e.exit_code}, {e.source}){note}")
    return "\n".join(lines)


def baseline_items(state: TaskState) -> list[tuple[str, str]]:
    """(kind, text) of everything a compaction must keep (CMP-10): goal, constraints, approvals, the
    not-approved gated actions, open items, evidence references."""
    items: list[tuple[str, str]] = []
    if state.goal:
        items.append(("goal", state.goal))
    items.extend(("constraint", c.text) for c in state.constraints)
    items.extend(("approval", a) for a in state.approvals)
    items.extend(("open_item", i) for i in state.open_items)
    items.extend(("evidence", e.id) for e in state.evidence)
    return items
