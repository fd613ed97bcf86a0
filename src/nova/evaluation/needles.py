"""Needle survival: plant facts in a recorded session, force N compactions, see which facts are still there.

Each depth gets one small episode planted between two exchanges of the recording, the way such facts
arise in a real run:

- `constraint`: the agent pauses, the user answers with a constraint (a user message of its own);
- `decision`: the agent states a decision with its reason, then writes a file (`path`) and reads a
  measurement back from the tool (`number`);
- `error`: it runs a check that fails with a distinctive last line (`error`).

The planted session is replayed with the `nova` policy (`nova.evaluation.replay.replay_messages`: the live
context pipeline, with the extractive summarizer `nova replay` uses) with N compactions forced at even steps from the first planted episode to
the end of the run, the last one right before the final view. A fact survives when its exact text is
readable in the final view, verbatim in a kept message or inside the compaction summary; it is reachable
when it survives or the view names a message of the recording that holds it (`SurvivalRun.reachable`).
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

from nova.evaluation.replay import replay_messages, view_text
from nova.messages import Message, TextPart, ToolResultPart, ToolUsePart
from nova.sessions.repair import repair_history
from nova.tokens import TokenCounter

__all__ = ["DEPTHS", "FACT_CLASSES", "Needle", "Planted", "SurvivalRun", "force_points", "named_messages", "plant",
           "survive"]

FACT_CLASSES = ("constraint", "decision", "path", "error", "number")
# Ten depths, the middle of each tenth of the run.
DEPTHS: tuple[float, ...] = tuple((i + 0.5) / 10 for i in range(10))

# Several wordings per class, so no single phrase is what survives: the names and numbers are random.
_CONSTRAINTS = (
    "Please do not modify {path2}; the {team} team owns that file and reviews every change to it.",
    "One constraint from my side: keep the public signature of {func} unchanged, other packages call it.",
    "Important: the fix must not add a new dependency, we ship {team} offline and cannot install packages.",
    "Rule for the rest of this task: never run the full test suite, only the tests under {dir}.",
    "Keep the change backwards compatible with Python 3.8, the {team} deployment still runs it.",
)
_DECISIONS = (
    "I decided to patch {func} in place instead of adding a wrapper, because the wrapper would change the "
    "call order the {team} module relies on.",
    "Decision: keep the cache in {path} rather than in the settings module, since settings is imported "
    "before the registry exists.",
    "I will go with the lazy lookup approach for {func}, because eager loading breaks the {team} import "
    "cycle.",
    "The root cause is that {func} reads a stale copy, so the fix is to re-read it after each reload.",
    "We should use a sentinel value for {func} instead of None, because None is a valid stored value.",
)
_TEAMS = ("billing", "search", "storage", "payments", "identity", "mobile", "ingest", "ledger", "routing",
          "metrics")


@dataclass(frozen=True, slots=True)
class Needle:
    kind: str
    """One of `FACT_CLASSES`."""
    depth: float
    text: str
    """The exact text that must stay readable."""


@dataclass(frozen=True, slots=True)
class Planted:
    messages: tuple[Message, ...]
    needles: tuple[Needle, ...]
    first_index: int
    """Index in `messages` of the first planted message."""


def _episode(rng: random.Random, slot: int, depth: float, prefix: str) -> tuple[list[Message], list[Needle]]:
    word = "".join(rng.choice("bcdfghjklmnpqrstvwxz") for _ in range(6))
    team = _TEAMS[slot % len(_TEAMS)]
    func = f"resolve_{word}"
    dir_ = f"tests/{word}_cases"
    path = f"src/{word}/{team}_{rng.randint(100, 999)}.py"
    path2 = f"lib/{team}/{word}_legacy.py"
    number = str(rng.randint(10_000, 99_999))
    code = f"E{rng.randint(1000, 9999)}"
    names = {"path": path, "path2": path2, "func": func, "team": team, "dir": dir_}
    constraint = _CONSTRAINTS[slot % len(_CONSTRAINTS)].format(**names)
    decision = _DECISIONS[(slot + 2) % len(_DECISIONS)].format(**names)
    error = f"{word.capitalize()}Error: [{code}] shard {slot} checksum does not match the manifest"
    ids = f"{prefix}needle-{slot}"
    messages = [
        Message.assistant("THOUGHT: Before I go on, a short status: I have read the relevant code and know "
                          "where to change it. Is there anything I should keep in mind?", id=f"{ids}-ask"),
        Message.user(constraint, id=f"{ids}-constraint"),
        Message(role="assistant", id=f"{ids}-write", parts=(
            TextPart(f"THOUGHT: Understood. {decision}"),
            ToolUsePart(f"{ids}-w", "bash", {"command": f"mkdir -p src/{word} && printf 'LIMIT = {number}\\n' > {path}"
                                                         f" && python -c 'import sys; print(sys.argv[1])' {number}"}),
        )),
        Message(role="user", id=f"{ids}-wrote", parts=(
            ToolResultPart(f"{ids}-w", f"<returncode>0</returncode>\n<output>\n{number}\n</output>"),)),
        Message(role="assistant", id=f"{ids}-check", parts=(
            TextPart("THOUGHT: Now run the consistency check on the new module."),
            ToolUsePart(f"{ids}-c", "bash", {"command": f"python -m {word}.check --strict"}),
        )),
        Message(role="user", id=f"{ids}-failed", parts=(
            ToolResultPart(f"{ids}-c", "<returncode>1</returncode>\n<output>\nTraceback (most recent call last):\n"
                                       f'  File "{path}", line 1, in <module>\n{error}\n</output>'),)),
    ]
    needles = [Needle("constraint", depth, constraint), Needle("decision", depth, decision),
               Needle("path", depth, path), Needle("error", depth, error), Needle("number", depth, number)]
    return messages, needles


def plant(messages: Sequence[Message], *, depths: Sequence[float] = DEPTHS, seed: int = 0) -> Planted:
    """`messages` (repaired as a replay would) with one episode planted at each depth, between two
    exchanges: right before the first assistant message at or after that share of the run."""
    base, _ = repair_history(messages)
    rng = random.Random(seed)
    assistants = [i for i, m in enumerate(base) if m.role == "assistant"]
    if not assistants:
        raise ValueError("the session has no assistant message to plant facts between")
    at: dict[int, list[Message]] = {}
    needles: list[Needle] = []
    for slot, depth in enumerate(depths):
        index = next((i for i in assistants if i >= depth * len(base)), assistants[-1])
        episode, planted = _episode(rng, slot, depth, f"s{seed}-")
        at.setdefault(index, []).extend(episode)
        needles += planted
    out: list[Message] = []
    first = -1
    for i, m in enumerate(base):
        if i in at:
            first = len(out) if first < 0 else first
            out.extend(at[i])
        out.append(m)
    return Planted(tuple(out), tuple(needles), first)


def force_points(planted: Planted, compactions: int) -> list[int]:
    """N indexes before which a compaction is forced, at even steps from the first planted message to the
    end; each snapped to the next assistant message (a compaction between a call and its result would
    split them), the last one the end itself (right before the final view)."""
    messages = planted.messages
    start, end = planted.first_index, len(messages)
    points: list[int] = []
    for k in range(1, compactions + 1):
        index = start + round((end - start) * k / compactions)
        while index < end and messages[index].role != "assistant":
            index += 1
        if k == compactions:
            index = end
        if points and index <= points[-1]:
            index = min(end, points[-1] + 1)
            while index < end and messages[index].role != "assistant":
                index += 1
        points.append(index)
    return sorted(set(points))


@dataclass(frozen=True, slots=True)
class SurvivalRun:
    compactions: int
    """Compactions the replay really made: the forced ones that had something to fold, plus the
    controller's own at the threshold."""
    survived: tuple[tuple[Needle, bool], ...]
    reachable: tuple[tuple[Needle, bool], ...] = ()
    """Whether each needle can be read back from what the view names: it is in the view, or the view names
    (by `msg ID`, or a saved output's file `tool-output/ID.txt` / `message-text/ID.txt`) a message of the
    recording that holds it."""


# How a view names a message it no longer shows: the summary's `(msg ID)` pointers and the files a cut or
# a snip saved the full text to, named after the message.
_NAMED_MESSAGE = re.compile(r"\bmsgs? ([\w.~:-]+)|(?:tool-output|message-text)/([\w.~:-]+?)(?:\.\d+)?\.txt")


def named_messages(text: str) -> set[str]:
    """Ids of the messages `text` points to (see `_NAMED_MESSAGE`)."""
    return {(a or b).rstrip(".,:;") for a, b in _NAMED_MESSAGE.findall(text)}


def survive(planted: Planted, *, system: str, compactions: int, window: int, counter: TokenCounter
            ) -> SurvivalRun:
    """Replay `planted` under the `nova` policy with `compactions` forced compactions; which needles are
    still readable in the final view, and which can be read back from what it names."""
    report = replay_messages(planted.messages, system=system, window=window, policy="nova", counter=counter,
                             compact_before=force_points(planted, compactions))
    text = view_text(report.final_view)
    raw = {m.id: view_text([m]) for m in planted.messages}
    named = "\n".join(raw[i] for i in named_messages(text) if i in raw)
    survived = tuple((n, n.text in text) for n in planted.needles)
    reachable = tuple((n, ok or n.text in named) for n, ok in survived)
    return SurvivalRun(report.compactions, survived, reachable)
