"""Sub-agents (CTX-5): the `task` tool hands a sub-task to a child agent and returns only its report.

Two modes:

- isolated: a fresh context. The child's first message is a brief (the sub-task, the tools it has, the
  skill it should use) and nothing of the parent's conversation; its task state starts as a copy of the
  parent's, so the user's goal and constraints (and the deny rules they imply) hold in the child too.
- fork: the parent's history up to the message holding the delegating call, then the sub-task as a
  message of its own (origin "task", so the parent's request stays the child's current request). The
  system text, the tool catalog and every message before the delegating call are the parent's, byte for
  byte, so the child's first request reads the parent's cached prefix.

The child is a complete agent (`nova.agent.builder.build_agent`): its own budget, compaction and prompt cache,
and its own session, linked to the parent's (`parent_id`; `nova sessions show` lists it). Its final
answer is the tool result; its usage and cost ride back in the result's metadata and the parent's loop
adds them to the parent's totals. Several `task` calls in one model message run concurrently (the tool
is `concurrent`; nova.agent.loop). A sub-agent cannot start sub-agents of its own (depth 1).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from nova.messages import Message, TextPart
from nova.model import Usage
from nova.skills.manifest import Skill
from nova.tools._schema import object_schema, param
from nova.tools.base import ToolContext, ToolOutput

if TYPE_CHECKING:
    from nova.agent.loop import Agent

__all__ = ["MAX_DEPTH", "ChildAgent", "ChildStart", "SubTask", "TaskTool", "fork_history"]

MAX_DEPTH = 1
Mode = Literal["isolated", "fork"]


@dataclass(frozen=True, kw_only=True)
class SubTask:
    prompt: str
    mode: Mode
    title: str
    tools: tuple[str, ...] | None = None
    """Isolated mode: the tools the child gets (default: the parent's, `task` excepted)."""
    skill: str = ""


@dataclass(frozen=True, kw_only=True)
class ChildStart:
    """What the parent hands the factory that builds a child agent."""

    task: SubTask
    history: tuple[Message, ...]
    """Fork: the parent's history before the delegating message. Isolated: empty."""
    tools: frozenset[str] | None
    """The child's tool names; None: the parent's catalog unchanged (fork keeps it byte for byte)."""
    depth: int
    state: Mapping[str, Any] | None
    """The parent's task state, copied into the child's."""
    cache_key: str
    """Fork: the parent's prompt-cache key, so the provider routes both to the same cache."""
    limits: tuple[Skill, ...] = ()
    """The skills in use by the parent: their limits hold in the child too (a skill cannot delegate its
    way out of what it declared)."""


@dataclass(frozen=True, kw_only=True)
class ChildAgent:
    agent: Agent
    session_id: str
    close: Callable[[], None]


ChildFactory = Callable[[ChildStart], ChildAgent]


def fork_history(history: Sequence[Message], tool_use_id: str) -> tuple[Message, ...]:
    """The parent's history before the assistant message holding call `tool_use_id` (all of it when the
    call is not found: the delegating message is always the last one while its tools run)."""
    for index in range(len(history) - 1, -1, -1):
        if any(call.id == tool_use_id for call in history[index].tool_uses()):
            return tuple(history[:index])
    return tuple(history)


def fork_message(task: SubTask) -> Message:
    return Message(role="user", origin="task", parts=(TextPart(
        "[Sub-task] You are a forked sub-agent: the conversation above is your parent's, up to the point it "
        "delegated this sub-task to you. Do only this sub-task, then answer with a concise final report "
        "(what you found or changed, and how you checked); only that report goes back to the parent.\n\n"
        f"Sub-task: {task.prompt}"),))


def isolated_message(task: SubTask, *, tools: Sequence[str], goal: str, skill_body: str) -> Message:
    lines = ["You are a sub-agent. Another agent delegated this sub-task to you; you do not see its "
             "conversation. Do only this sub-task, then answer with a concise final report (what you found "
             "or changed, and how you checked); only that report goes back.", "", f"Sub-task: {task.prompt}"]
    if goal:
        lines += ["", f"The overall goal it serves: {goal}"]
    lines += ["", f"Your tools: {', '.join(tools) or 'none'}."]
    parts: list[TextPart] = []
    if skill_body:
        parts.append(TextPart(skill_body))
        lines += [f"Use the skill {task.skill} loaded above."]
    parts.append(TextPart("\n".join(lines)))
    return Message(role="user", parts=tuple(parts))


class TaskTool:
    name = "task"
    description = (
        "Delegate a self-contained sub-task to a sub-agent; only its final report comes back, so its "
        "searching and reading never fill your context. mode 'isolated' (default) starts it fresh with "
        "your brief and the tools you list; mode 'fork' gives it your conversation so far. Several task "
        "calls in one message run in parallel."
    )
    input_schema: Mapping[str, Any] = object_schema({
        "prompt": param("string", "The sub-task: what to do and what to report."),
        "description": param("string", "A short title (3-6 words)."),
        "mode": param("string", enum=["isolated", "fork"]),
        "tools": param("array", "Isolated mode: the tools the sub-agent may use (default: yours).",
                       items=param("string")),
        "skill": param("string", "Isolated mode: a skill the sub-agent starts with."),
    }, required=["prompt"])
    # It changes nothing itself: each of the sub-agent's calls is checked by the same permission policy.
    read_only = True
    concurrent = True

    def __init__(self, *, factory: ChildFactory, depth: int, skill_body: Callable[[str], str] | None = None,
                 in_use: Callable[[], tuple[Skill, ...]] = tuple) -> None:
        self.factory = factory
        self.depth = depth
        self.skill_body = skill_body
        self.in_use = in_use
        self._parent: Agent | None = None

    def bind(self, parent: Agent) -> None:
        """The agent whose calls this tool answers (it is built with the tool, so bound after)."""
        self._parent = parent

    def run(self, input: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
        if self.depth >= MAX_DEPTH:
            return ToolOutput(content="Error: a sub-agent cannot start sub-agents; do the work yourself.",
                              is_error=True)
        parent = self._parent
        if parent is None:
            return ToolOutput(content="Error: the task tool is not attached to an agent.", is_error=True)
        task = _parse(input)
        if isinstance(task, str):
            return ToolOutput(content=f"Error: {task}", is_error=True)
        state = _parent_state(parent)
        if task.mode == "fork":
            start = ChildStart(task=task, history=fork_history(parent.history, ctx.tool_use_id), tools=None,
                               depth=self.depth + 1, state=state, cache_key=parent.cache.cache_key or "",
                               limits=self.in_use())
            first = fork_message(task)
        else:
            names = [n for n in parent.tools.names() if n != self.name]
            if task.tools is not None:
                unknown = sorted(set(task.tools) - set(names))
                if unknown:
                    return ToolOutput(content=f"Error: unknown tools {unknown}; the tools are {names}.",
                                      is_error=True)
                names = [n for n in names if n in task.tools]
            body = ""
            if task.skill:
                if self.skill_body is None:
                    return ToolOutput(content="Error: no skills are available here.", is_error=True)
                body = self.skill_body(task.skill)
                if not body:
                    return ToolOutput(content=f"Error: no skill named {task.skill!r}.", is_error=True)
            start = ChildStart(task=task, history=(), tools=frozenset(names), depth=self.depth + 1, state=state,
                               cache_key="", limits=self.in_use())
            goal = str((state or {}).get("goal") or "")
            first = isolated_message(task, tools=names, goal=goal, skill_body=body)
        child = self.factory(start)
        try:
            result = child.agent.run_turn(first)
        finally:
            child.close()
        report = result.text.strip() or f"(the sub-agent ended without a report: {result.stop_reason})"
        failed = result.stop_reason not in ("end_turn", "stop", "max_tokens")
        header = f"[sub-agent {child.session_id} ({task.mode}): {result.steps} steps, stop: {result.stop_reason}]"
        # Every call the sub-agent made (its compactions too, not only its turn's steps) is paid by this one.
        spent = child.agent.meter.total()
        return ToolOutput(content=f"{header}\n{report}", is_error=failed, metadata={
            "subagent_session": child.session_id, "subagent_mode": task.mode, "subagent_calls": spent.calls,
            "subagent_usage": spent.usage.to_dict(),
            "subagent_cost_usd": spent.cost_usd if spent.cost_known else None,
        })


def _parse(input: Mapping[str, Any]) -> SubTask | str:
    prompt = input.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        return "`prompt` must say what the sub-agent is to do"
    raw_mode = input.get("mode") or "isolated"
    if raw_mode not in ("isolated", "fork"):
        return f"`mode` must be 'isolated' or 'fork', not {raw_mode!r}"
    mode: Mode = "fork" if raw_mode == "fork" else "isolated"
    tools = input.get("tools")
    if tools is not None and (not isinstance(tools, list) or not all(isinstance(t, str) for t in tools)):
        return "`tools` must be a list of tool names"
    skill = input.get("skill") or ""
    if not isinstance(skill, str):
        return "`skill` must be a skill name"
    title = str(input.get("description") or prompt.strip().splitlines()[0])[:80]
    return SubTask(prompt=prompt.strip(), mode=mode, title=title, tools=tuple(tools) if tools is not None else None,
                   skill=skill.strip())


def _parent_state(parent: Agent) -> Mapping[str, Any] | None:
    from nova.agent.context_runtime import ContextRuntime

    runtime = parent.extensions.get(ContextRuntime)
    if runtime is None:
        return None
    state = runtime.state.load()
    return None if state.empty else state.to_dict()


def usage_of(metadata: Mapping[str, Any]) -> Usage:
    reported = metadata.get("subagent_usage")
    return Usage.from_dict(dict(reported)) if isinstance(reported, Mapping) else Usage()
