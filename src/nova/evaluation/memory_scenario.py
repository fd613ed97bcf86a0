"""A scripted memory scenario: memories, then requests, run through the real recall pipeline, to measure
memory usefulness (`nova.evaluation.usefulness`) and what recall retrieves per turn.

A case's `memory` key:

    memory:
      memories:
        - {name: test-command, type: project, body: "Run the tests with `make check`."}
        - {name: old-idea, body: "Try `tox -e lint`.", reviewed: false}   # a model's unreviewed note
      turns:
        - ask: "How do I run the tests?"
          answer: "I'll run `make check`."     # the scripted agent's answer (offline)

Memories are written into a store in a temporary home and project (never the user's own) through the
review ledger: `reviewed: true` (the default) as the user approving them (`nova memory add`),
`reviewed: false` as a model's proposal waiting for review (a candidate, never recalled). `type` is
user, feedback, project or reference (default project); `description` defaults to the body's first line.
Each turn is one request on its own: `nova.memory.recall.recall` picks memories for the `ask` by keyword
(no model selector, so offline and `--call-model` recall the same), and the answer is the turn's
`answer`, or with `--call-model` the configured model's reply to the ask followed by the recall block,
as the agent loop delivers it.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nova.errors import NovaError
from nova.evaluation.case_keys import reject_unknown_keys
from nova.evaluation.usefulness import RecalledUse, uses_of
from nova.memory.config import MemoryConfig
from nova.memory.governance import Proposal, remember
from nova.memory.recall import recall
from nova.memory.store import MEMORY_TYPES, MemoryStore
from nova.messages import Message, TextPart
from nova.model import ModelRequest
from nova.providers.base import Provider, collect

__all__ = ["MemoryScenario", "ScenarioError", "ScenarioMemory", "ScenarioTurn", "TurnOutcome",
           "parse_memory_scenario", "run_memory_scenario"]

SYSTEM = "You are a coding agent. Answer the user's request in a few sentences; say which command you would run."


class ScenarioError(NovaError):
    """A scripted scenario that is written wrongly or cannot be set up."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ScenarioMemory:
    name: str
    body: str
    type: str = "project"
    description: str = ""
    reviewed: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class ScenarioTurn:
    ask: str
    answer: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryScenario:
    memories: tuple[ScenarioMemory, ...]
    turns: tuple[ScenarioTurn, ...]


def _text(entry: dict[str, Any], key: str, where: str, *, required: bool = True) -> str:
    value = entry.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or not value.strip():
        raise ScenarioError(f"{where}: `{key}` must be a non-empty string")
    return value


def parse_memory_scenario(data: object, where: str) -> MemoryScenario:
    """A case's `memory` mapping (see the module docstring); errors name the entry and the key."""
    if not isinstance(data, dict):
        raise ScenarioError(f"{where}: `memory` is a mapping with `memories` and `turns`")
    reject_unknown_keys(data, ("memories", "turns"), f"{where} memory", ScenarioError)
    memories, turns = data.get("memories") or [], data.get("turns")
    if not isinstance(memories, list):
        raise ScenarioError(f"{where}: memory.memories must be a list")
    if not isinstance(turns, list) or not turns:
        raise ScenarioError(f"{where}: memory.turns must be a non-empty list of {{ask, answer}}")
    parsed: list[ScenarioMemory] = []
    for i, entry in enumerate(memories):
        at = f"{where} memory.memories[{i + 1}]"
        if not isinstance(entry, dict):
            raise ScenarioError(f"{at}: a memory is a mapping with `name` and `body`")
        reject_unknown_keys(entry, ("body", "description", "name", "reviewed", "type"), at, ScenarioError)
        mtype = entry.get("type", "project")
        if mtype not in MEMORY_TYPES:
            raise ScenarioError(f"{at}: `type` must be one of {', '.join(MEMORY_TYPES)}")
        reviewed = entry.get("reviewed", True)
        if not isinstance(reviewed, bool):
            raise ScenarioError(f"{at}: `reviewed` must be true or false")
        body = _text(entry, "body", at)
        parsed.append(ScenarioMemory(name=_text(entry, "name", at), body=body, type=mtype, reviewed=reviewed,
                                     description=_text(entry, "description", at, required=False)
                                     or body.strip().splitlines()[0][:100]))
    parsed_turns: list[ScenarioTurn] = []
    for i, entry in enumerate(turns):
        at = f"{where} memory.turns[{i + 1}]"
        if not isinstance(entry, dict):
            raise ScenarioError(f"{at}: a turn is a mapping with `ask` (and `answer` offline)")
        reject_unknown_keys(entry, ("answer", "ask"), at, ScenarioError)
        parsed_turns.append(ScenarioTurn(ask=_text(entry, "ask", at),
                                         answer=_text(entry, "answer", at, required=False) or None))
    return MemoryScenario(memories=tuple(parsed), turns=tuple(parsed_turns))


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnOutcome:
    turn: int
    ask: str
    answer: str
    answered_by: str
    """"script" (the case's answer) or "model" (`--call-model`)."""
    recalled: tuple[str, ...]
    scanned: int
    """Memories recall could choose from (reviewed, not expired or revoked)."""
    recall_ms: float
    uses: tuple[RecalledUse, ...]

    def to_json(self) -> dict[str, Any]:
        return {"turn": self.turn, "ask": self.ask, "answer": self.answer, "answered_by": self.answered_by,
                "recalled": list(self.recalled), "recallable": self.scanned, "recall_ms": round(self.recall_ms, 3),
                "uses": [u.to_json() for u in self.uses]}


def _seed(store: MemoryStore, memories: Sequence[ScenarioMemory]) -> None:
    for m in memories:
        outcome = remember(store, Proposal(name=m.name, description=m.description, type=m.type, body=m.body,
                                           author="user" if m.reviewed else "model",
                                           origin="cli" if m.reviewed else "assistant"),
                           config=MemoryConfig())
        if outcome.memory is None:
            raise ScenarioError(f"memory {m.name!r} was refused by the memory review: {outcome.refused}")


def _ask(provider: Provider, model: str, ask: str, block: str) -> str:
    messages = [Message.user(ask)]
    if block:
        messages.append(Message(role="user", parts=(TextPart(block),), origin="memory"))
    request = ModelRequest(model=model, system=SYSTEM, messages=messages, max_output_tokens=1024,
                           metadata={"purpose": "memory-scenario"})
    return collect(provider, request).message.text


def run_memory_scenario(scenario: MemoryScenario, *, provider: Provider | None = None, model: str = "",
                        on_turn: Callable[[], None] | None = None) -> list[TurnOutcome]:
    """Each turn's recall and answer, in a temporary home and project removed afterwards. Without a
    provider every turn needs its scripted `answer`."""
    outcomes: list[TurnOutcome] = []
    with tempfile.TemporaryDirectory(prefix="nova-eval-memory-") as tmp:
        home, project = Path(tmp) / "home", Path(tmp) / "project"
        (project / ".git").mkdir(parents=True)
        home.mkdir()
        store = MemoryStore.for_workspace(home=home, cwd=project)
        _seed(store, scenario.memories)
        for number, turn in enumerate(scenario.turns, 1):
            began = time.perf_counter()
            result = recall(turn.ask, dirs=store.dirs, config=MemoryConfig(), reviews=store.reviews)
            took = (time.perf_counter() - began) * 1000
            if provider is not None:
                answer, by = _ask(provider, model, turn.ask, result.block), "model"
            elif turn.answer is not None:
                answer, by = turn.answer, "script"
            else:
                raise ScenarioError(f"memory turn {number} has no `answer`: write the scripted answer, or run "
                                    "with --call-model")
            uses = uses_of([(m.name, m.body) for m in result.memories], answer, request=turn.ask, recall=number)
            outcomes.append(TurnOutcome(turn=number, ask=turn.ask, answer=answer, answered_by=by,
                                        recalled=tuple(m.name for m in result.memories), scanned=result.scanned,
                                        recall_ms=took, uses=tuple(uses)))
            if on_turn is not None:
                on_turn()
    return outcomes
