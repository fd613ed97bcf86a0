"""`ContextRuntime`: the context compiler in a live agent, an extension (order 200).

What it provides, each piece in one place (`nova.agent.builder.build_agent` puts them together):

- `compile_view` hook: every request is compiled (nova.context.compiler) from the stable head (system
  contract, org policy, project rules per file), the tool catalog, history, the pinned task state and
  the environment snapshot. The last `Compiled` (view + manifest) is kept for `/context`.
- `measure`: the compaction decision measures the same compiled view (TOK-3).
- `deny_rules`: rules derived from task state (an unapproved merge), checked where tools run.
- new user requests: imperative rules are queued for the user to confirm (never stored unconfirmed).

`task_state_tools` gives the tools their part in task state: the `bash` tool records a test command's
real exit code as evidence, bound to the workspace hash; `propose_task_update` is the model's one way to
suggest task-state changes. They need only the task-state store, so the tool catalog exists before the
pipeline that measures it (`nova.agent.pipeline`).

`build_context_sources` builds the same sources for a recorded session, which is what
`nova context SESSION` compiles.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nova.context.budget import ContextBudget
from nova.context.compiler import (
    Compiled,
    CompileInput,
    ContextCompiler,
    SourceText,
    current_request_index,
)
from nova.context.continuity import ContinuityGuard
from nova.context.extensions import CompiledView, CompileRequest, Extension
from nova.context.policy import PolicySource, load_org_policy
from nova.context.skill_block import users_words
from nova.context.state import (
    MemoryStateSource,
    ProposalResult,
    TaskState,
    TaskStateStore,
    apply_command,
    deny_rules,
    propose_from_message,
    record_test_run,
    render_pinned,
    validate_proposal,
    workspace_hash,
)
from nova.memory.instructions import load_rules, parse_instructions_config, render_rules
from nova.memory.paths import project_root
from nova.messages import Message
from nova.model import ToolSpec
from nova.sessions.readers.nova import TASK_STATE_EVENT
from nova.sessions.recorder import RecordedSession, TaskStateSource
from nova.sessions.store import StoredTaskState
from nova.skills.catalog import SkillCatalog, load_catalog
from nova.tokens import TokenLedger
from nova.tools._schema import param
from nova.tools.base import Tool, ToolContext, ToolOutput, ToolRegistry
from nova.tools.policy.trust import TrustStore, trust_hint

if TYPE_CHECKING:
    from nova.settings import Settings

__all__ = ["ContextRuntime", "ContextSources", "build_context_sources", "environment_snapshot",
           "environment_text", "org_policy_path", "record_test_evidence", "state_store_for", "task_state_tools"]

log = logging.getLogger(__name__)

RULES_TITLE = "# Instructions from the user and the project (follow them)"
PINNED_BUDGET_DEFAULT = 2000


def org_policy_path(settings: Settings) -> Path:
    """`policy.file` in the config, else `<NOVA_HOME>/policy.md` (`~/.nova/policy.md`)."""
    configured = settings.section("policy").get("file")
    return Path(str(configured)).expanduser() if configured else settings.home / "policy.md"


@dataclass(frozen=True, kw_only=True)
class ContextSources:
    """The stable head as pieces with their provenance, and the policy sources for conflict checks."""

    head: tuple[SourceText, ...]
    policy: tuple[PolicySource, ...]
    skills: SkillCatalog = field(default_factory=lambda: SkillCatalog(skills={}))
    """The skills found at session start: their index is a head piece, their bodies load on demand."""
    missing_imports: tuple[Path, ...] = ()
    """Files the rules `@import` that do not exist (yet): the next session would read one made there."""

    @property
    def system(self) -> str:
        return "\n\n".join(p.text for p in self.head)


@functools.lru_cache(maxsize=16)
def _say_untrusted_skills(root: Path, names: tuple[str, ...]) -> None:
    log.warning("leaving out skills with scripts that are not trusted for this project: %s; %s",
                ", ".join(names), trust_hint(root))


def build_context_sources(*, settings: Settings, cwd: Path, contract: str, extra_system: str = "",
                          skills: SkillCatalog | None = None) -> ContextSources:
    """Head pieces: contract → org policy → project rules (one piece per file) → skill index → extra
    system text. `skills` defaults to the ones found for `cwd` (nova.skills.catalog)."""
    head: list[SourceText] = [SourceText(id="system.contract", cls="always-on", source="nova: SYSTEM_CONTRACT",
                                         text=contract, reason="the fixed system contract (stable prefix)")]
    policy: list[PolicySource] = []
    org_path = org_policy_path(settings)
    org = load_org_policy(org_path)
    if org is not None:
        text, digest = org
        piece_id = f"policy:{org_path}"
        head.append(SourceText(id=piece_id, cls="always-on", source=f"file:{org_path}#{digest}", version=digest,
                               text=f"# Organisation policy (highest precedence)\n\n{text}",
                               reason="organisation policy: always on, outranks every other source (CTX-3)"))
        policy.append(PolicySource(level="org", id=piece_id, text=text))
    config = parse_instructions_config(settings.section("instructions"),
                                       source=f"{settings.config_file} [instructions]")
    rules = load_rules(cwd=cwd, home=settings.home, config=config)
    for index, loaded in enumerate(rules.files):
        # The same text `render_rules` gives the whole chain, cut per file so each has its provenance.
        text = render_rules([loaded])
        if index == 0:
            text = f"{RULES_TITLE}\n\n{text}"
        digest = _digest(loaded.text)
        piece_id = f"rules:{loaded.path}"
        head.append(SourceText(id=piece_id, cls="always-on", source=f"file:{loaded.path}#{digest}", version=digest,
                               text=text, reason=f"{loaded.kind} instruction file, loaded every turn (INS-3)"))
        policy.append(PolicySource(level="project", id=piece_id, text=loaded.text.strip()))
    catalog = skills if skills is not None else load_catalog(cwd=cwd, home=settings.home,
                                                             trust=TrustStore(settings.home))
    if catalog.untrusted and skills is None:
        _say_untrusted_skills(project_root(cwd), catalog.untrusted)
    skill_index = catalog.index_text()
    if skill_index:
        # SKL-1: names and one line each, in the stable head (cached); the bodies load on demand.
        head.append(SourceText(id="skills.index", cls="index", source=f"skills: {catalog.index_version()}",
                               version=_digest(skill_index), text=skill_index,
                               reason=f"skill index ({len(catalog)} skills; each body loads on demand)"))
    if extra_system:
        head.append(SourceText(id="system.extra", cls="always-on", source="caller: extra_system",
                               text=extra_system, reason="extra system text given by the caller"))
    missing = tuple(s.path for s in rules.skipped if s.imported_by is not None and s.reason.startswith("not found"))
    return ContextSources(head=tuple(head), policy=tuple(policy), skills=catalog, missing_imports=missing)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def environment_snapshot(cwd: Path) -> str:
    """Where the agent works: directory, git branch, platform. Read from files (no subprocess) so it is
    cheap to take once per user request."""
    return environment_text(cwd=str(cwd), branch=_git_branch(cwd))


def environment_text(*, cwd: str, branch: str = "", platform: str = sys.platform) -> str:
    """The environment observation's text (a replay writes it from what the recording says)."""
    lines = ["[Environment]", f"cwd: {cwd}", f"platform: {platform}"]
    if branch:
        lines.append(f"git branch: {branch}")
    return "\n".join(lines)


def _git_branch(cwd: Path) -> str:
    branch = ""
    for directory in (cwd, *cwd.parents):
        head = directory / ".git" / "HEAD"
        if head.is_file():
            try:
                ref = head.read_text(encoding="utf-8").strip()
            except OSError:
                break
            branch = ref.removeprefix("ref: refs/heads/") if ref.startswith("ref:") else f"detached at {ref[:12]}"
            break
    return branch


def task_state_tools(registry: ToolRegistry, state: TaskStateStore) -> ToolRegistry:
    """`registry` with `bash` recording test evidence in `state` and `propose_task_update` added."""
    return ToolRegistry([
        *(_EvidenceTool(t, state) if t.name == "bash" else t for t in registry),
        ProposeTaskUpdateTool(state),
    ])


def record_test_evidence(state: TaskStateStore, *, command: str, exit_code: int, cwd: Path) -> None:
    """A test command's real exit code, as evidence bound to the workspace hash at this moment."""
    workspace, now = workspace_hash(cwd), time.time()
    state.update(lambda s: record_test_run(s, command=command, exit_code=exit_code, workspace=workspace,
                                           source=f"bash `{command}`", now=now))


class _EvidenceTool:
    """Wraps `bash`: after a test command runs, its real exit code goes into task state as evidence,
    bound to the workspace hash at that moment (CTX-6). The model's own words never get here."""

    def __init__(self, inner: Tool, state: TaskStateStore) -> None:
        self.inner = inner
        self.name = inner.name
        self.description = inner.description
        self.input_schema = inner.input_schema
        self.read_only = inner.read_only
        self.state = state

    def run(self, input: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
        output = self.inner.run(input, ctx)
        command = input.get("command")
        exit_code = output.metadata.get("exit_code")
        if isinstance(command, str) and isinstance(exit_code, int) and not output.metadata.get("timed_out"):
            record_test_evidence(self.state, command=command, exit_code=exit_code, cwd=ctx.cwd)
        return output


class ProposeTaskUpdateTool:
    """The model's one way to touch task state: it proposes, deterministic code decides (CTX-6). Open
    items, plan steps and finished items are accepted as working notes; anything else (goal,
    constraints, approvals, acceptance, evidence) is refused with the reason, whatever the model says."""

    name = "propose_task_update"
    description = (
        "Propose an update to the pinned task state. You may add open items (`open_items`), mark items "
        "done (`done`) or replace the plan (`plan`). The goal, constraints, approvals, acceptance "
        "criteria and test evidence are kept by Nova from the user's commands and real tool results: "
        "proposals that touch them are refused."
    )
    input_schema: Mapping[str, Any] = {
        "type": "object",
        "properties": {
            "open_items": param("array", "Items to add.", items=param("string")),
            "done": param("array", "Open items now finished.", items=param("string")),
            "plan": param("array", "The new plan, step by step.", items=param("string")),
        },
        "additionalProperties": True,
    }
    # It changes nothing in the workspace, only Nova's notes, and refuses what the user owns.
    read_only = True

    def __init__(self, state: TaskStateStore) -> None:
        self.state = state

    def run(self, input: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
        outcome: list[ProposalResult] = []

        def apply(state: TaskState) -> TaskState:
            # Judged against the newest state on every attempt: a concurrent writer never loses an update.
            outcome[:] = [validate_proposal(state, dict(input))]
            return outcome[0].state if outcome[0].accepted else state

        self.state.update(apply)
        result = outcome[0]
        lines = [f"accepted: {', '.join(result.accepted)}"] if result.accepted else []
        lines += [f"refused: {reason}" for reason in result.refused]
        return ToolOutput(content="\n".join(lines) or "nothing to update",
                          is_error=bool(result.refused) and not result.accepted)


@dataclass(kw_only=True)
class ContextRuntime(Extension):
    order = 200

    cwd: Path
    sources: ContextSources
    state: TaskStateStore
    budget: ContextBudget
    compiler: ContextCompiler = field(default_factory=ContextCompiler)
    ledger: TokenLedger | None = None
    """The agent's one token ledger: its anchor makes the manifest's figure the loop's figure."""
    pinned_budget: int = PINNED_BUDGET_DEFAULT
    observe_requests: bool = True
    """Queue imperative rules of new requests for confirmation (off for read-only inspection)."""
    last: Compiled | None = None
    guard: ContinuityGuard | None = None
    """The continuity check wrapped around the compaction summarizer, when the agent compacts."""
    pinned_filter: Callable[[str], str] | None = None
    """Rewrites the pinned task state before it is shown (revoked memory text is redacted from it)."""
    environment: Callable[[Path], str] = environment_snapshot
    """The environment observation for `cwd`, taken once per user request (a replay writes the recorded one)."""
    workspace: Callable[[Path], str] = workspace_hash
    """The workspace hash evidence is judged against (a replay has no workspace to hash)."""
    _env: tuple[str, str] = ("", "")
    _workspace: tuple[str, str | None] = ("", None)
    _seen_request: str = ""

    # -- the hooks -----------------------------------------------------------------------------------
    def compile_view(self, *, request: CompileRequest) -> CompiledView:
        self.last = self.compile(request.history, system=request.system, tools=request.tools)
        return self.last.view

    def measure(self, history: Sequence[Message], system: str, tools: Sequence[ToolSpec]) -> int:
        # The figure alone: the manifest (built on first read) is for /context, not for every call.
        return self.compile(history, system=system, tools=tools).used

    def compile(self, history: Sequence[Message], *, system: str, tools: Sequence[ToolSpec]) -> Compiled:
        head = self.sources.head
        if "\n\n".join(p.text for p in head) != system:
            # The system text was changed after attach (a caller appended to it): it is one piece then.
            head = (SourceText(id="system", cls="always-on", source="agent.system_prompt", text=system,
                               reason="the agent's system prompt"),)
        state = self.state.load()
        req = current_request_index(history)
        if req < len(history) and self.observe_requests:
            state = self._notice_request(history[req], state)
        request_id = history[req].id if req < len(history) else ""
        pinned_text = render_pinned(state, workspace=self._workspace_hash(f"{request_id}:{state.version}", state))
        if self.pinned_filter is not None:
            pinned_text = self.pinned_filter(pinned_text)
        pinned = SourceText(id="task.state", cls="pinned", source=f"task state v{state.version} (session store)",
                            version=f"v{state.version}", text=pinned_text,
                            reason="canonical task state: goal, constraints, approvals, open items, evidence; "
                                   "re-inserted after every compaction") if pinned_text else None
        env = SourceText(id="environment", cls="always-on", source="environment snapshot (cwd, git, platform)",
                         text=self._environment(history[req].id if req < len(history) else ""),
                         reason="latest environment observation, refreshed each user request", priority=10)
        return self.compiler.compile(CompileInput(
            head=head, tools=tools, history=history, pinned=pinned, observations=(env,),
            policy=self.sources.policy, limit=self.budget.threshold, window=self.budget.window,
            pinned_budget=self.pinned_budget, ledger=self.ledger))

    # -- what the agent is built with --------------------------------------------------------------------
    def deny_rules(self) -> list[str]:
        """Deny rules the current task state implies (for the permission policy's dynamic rules)."""
        return deny_rules(self.state.load())

    # -- state writes (deterministic code only) ------------------------------------------------------
    def command(self, line: str) -> str:
        """`/goal`, `/constraint`, `/approve`, `/confirm`, … from the user; returns what to show them."""
        state = self.state.update(lambda s: apply_command(s, line, now=time.time()))
        return render_pinned(state) or "task state is empty"

    def _notice_request(self, message: Message, state: TaskState) -> TaskState:
        if message.id == self._seen_request:
            return state
        self._seen_request = message.id

        def notice(current: TaskState) -> TaskState:
            proposed = propose_from_message(current, users_words(message), message_id=message.id)
            return proposed if proposed.pending != current.pending else current

        return self.state.update(notice)

    def _workspace_hash(self, marker: str, state: TaskState) -> str | None:
        """The workspace hash the pinned block judges evidence against, sampled once per user request
        and task-state version: re-sampling after every edit would rewrite the pinned block, and with
        it every cached message after it, on each call of a tool loop. New evidence (a test run) bumps
        the version, so what the model is told about its own test runs is always current."""
        if not state.evidence:
            return None
        if self._workspace[0] != marker:
            self._workspace = (marker, self.workspace(self.cwd))
        return self._workspace[1]

    def _environment(self, request_id: str) -> str:
        if self._env[0] != request_id or not self._env[1]:
            self._env = (request_id, self.environment(self.cwd))
        return self._env[1]


def state_store_for(session: RecordedSession | None) -> TaskStateStore:
    """The recorded session's task state, else (a run with no record) an in-memory one. A recorded
    session also gets every write in its transcript (a `task_state` event), where it falls between the
    messages it came between: a replay compiles each call with the task state the live call had."""
    if session is None:
        return TaskStateStore(MemoryStateSource())
    return TaskStateStore(_RecordedStateSource(session, session.record_event))


class _RecordedStateSource(TaskStateSource):
    """A session's task state whose every write is also recorded as a `task_state` event."""

    def __init__(self, source: TaskStateSource, record: Callable[[str, Mapping[str, Any]], None]) -> None:
        self.source = source
        self.record = record

    def get_versioned_task_state(self) -> StoredTaskState | None:
        return self.source.get_versioned_task_state()

    def put_task_state(self, state: Mapping[str, Any], *, expected_version: int | None = None) -> int:
        version = self.source.put_task_state(state, expected_version=expected_version)
        try:
            self.record(TASK_STATE_EVENT, {"state": dict(state), "version": version})
        except Exception:  # the store has the state; a failed transcript line must not undo the write
            log.exception("session record: the task-state event could not be written")
        return version
