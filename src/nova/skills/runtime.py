"""Skills in a live agent: the `skill` tool, `/skill NAME`, and the limits of the skills in use.

A body loads on demand, two ways, both wrapped as a skill block (nova.context.skill_block):
- the model calls the `skill` tool with a name from the index; the body is the tool's result;
- the user types `/skill NAME [request]`; the body goes into that request, before the user's words.
Either way the skill is active from then until the user's request is answered (the turn ends): while it
is, every call is checked against its declared permissions first (nova.skills.limits), through the
permission policy's `limit` hook. Activation is kept here, per agent; a sub-agent given a skill starts
with it active.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from nova.context.extensions import Extension, LatePoller, TurnResult
from nova.context.skill_block import skill_blocks, wrap_body
from nova.errors import SkillError
from nova.memory.paths import project_root
from nova.messages import Message, TextPart
from nova.skills.catalog import SkillCatalog
from nova.skills.limits import refusal
from nova.skills.manifest import Skill
from nova.tools._schema import object_schema, param
from nova.tools.base import ToolContext, ToolOutput

__all__ = ["ActiveSkills", "SkillRuntime", "SkillTool", "body_of", "skill_request"]


def body_of(skill: Skill, arguments: str = "") -> str:
    body = skill.body.replace("$ARGUMENTS", arguments) if arguments else skill.body
    return wrap_body(name=skill.name, version=skill.version or skill.digest, folder=str(skill.folder), body=body)


class ActiveSkills:
    """The skills in use in one agent; read from the tool thread(s), written by the loop's."""

    def __init__(self, cwd: Path) -> None:
        self._lock = threading.Lock()
        self._active: dict[str, Skill] = {}
        self.root = project_root(cwd)

    def activate(self, skill: Skill) -> None:
        with self._lock:
            self._active[skill.name] = skill

    def clear(self) -> None:
        with self._lock:
            self._active.clear()

    def names(self) -> list[str]:
        with self._lock:
            return sorted(self._active)

    def skills(self) -> tuple[Skill, ...]:
        with self._lock:
            return tuple(self._active[name] for name in sorted(self._active))

    def refusal(self, tool: str, input: Mapping[str, Any], cwd: Path) -> str | None:
        """The permission policy's `limit` hook."""
        with self._lock:
            active = list(self._active.values())
        return refusal(active, tool, input, cwd=cwd, root=self.root) if active else None


class SkillTool:
    name = "skill"
    description = (
        "Load a skill by name (the skills are listed in the system prompt under '# Skills'). Returns the "
        "skill's instructions; follow them for the task it covers. While a skill is in use, only what it "
        "declares (tools, files, network) is permitted."
    )
    input_schema: Mapping[str, Any] = object_schema({
        "name": param("string", "The skill's name, as the index lists it."),
        "arguments": param("string", "Optional text the skill receives as $ARGUMENTS."),
    }, required=["name"])
    # It reads a skill Nova already indexed and changes nothing in the workspace.
    read_only = True

    def __init__(self, catalog: SkillCatalog, active: ActiveSkills) -> None:
        self.catalog = catalog
        self.active = active

    def run(self, input: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
        name = input.get("name")
        if not isinstance(name, str) or not name.strip():
            return ToolOutput(content="Error: `name` must be the name of a skill from the index.", is_error=True)
        try:
            skill = self.catalog.require(name.strip())
        except SkillError as exc:
            return ToolOutput(content=f"Error: {exc}", is_error=True)
        arguments = input.get("arguments")
        self.active.activate(skill)
        return ToolOutput(content=body_of(skill, arguments if isinstance(arguments, str) else ""),
                          metadata={"skill": skill.name, "skill_version": skill.version or skill.digest,
                                    "skill_path": str(skill.path)})


def skill_request(catalog: SkillCatalog, text: str) -> Message:
    """The user message `/skill NAME [request]` sends: the body, then the user's words (or, with none, an
    instruction to apply the skill). `SkillError` for an unknown name."""
    _, _, rest = text.strip().partition(" ")
    name, _, request = rest.strip().partition(" ")
    if not name:
        known = ", ".join(sorted(catalog.skills)) or "none"
        raise SkillError(f"/skill needs a name (available: {known})")
    skill = catalog.require(name)
    words = request.strip() or f"Apply the skill {skill.name} to the task at hand."
    return Message(role="user", parts=(TextPart(body_of(skill, request.strip())), TextPart(words)))


@dataclass(kw_only=True)
class SkillRuntime(Extension):
    """Activates the skills a user request loads with `/skill`, and ends every activation with the turn."""

    order: ClassVar[int] = 250

    catalog: SkillCatalog
    active: ActiveSkills

    def on_turn_start(self, *, user: Message) -> LatePoller | None:
        for part in user.parts:
            if isinstance(part, TextPart):
                for name, _ in skill_blocks(part.text):
                    skill = self.catalog.get(name)
                    if skill is not None:
                        self.active.activate(skill)
        return None

    def on_turn_end(self, *, result: TurnResult) -> None:
        self.active.clear()


def turn_input(extensions: Any, text: str) -> str | Message:
    """What a typed line becomes: `/skill NAME [request]` the skill's request message, anything else the
    text itself. `extensions` are the agent's (the skill catalog is found through them). `SkillError`
    for an unknown skill, before the turn starts."""
    if text.strip().split(" ", 1)[0] != "/skill":
        return text
    skills = extensions.get(SkillRuntime)
    if skills is None:
        raise SkillError("skills are not available in this session")
    return skill_request(skills.catalog, text)
