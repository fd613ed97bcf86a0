"""Evaluation cases: a recorded session, the policies to run it under and the evidence it requires.

A case file is JSON or YAML, one case or `{"cases": [...]}`:

    name: parser-fix                # optional, the session file's name by default
    session: runs/parser.traj.json  # any format `nova replay` reads; relative to the case file
    window: 32000                   # tokens (default 128000)
    policies: [nova, truncate]      # default [nova]
    provider_cache: anthropic       # anthropic | openai (default anthropic)
    price: claude-sonnet-4-5        # model table entry for the cost figures (default: none, cost null)
    evidence: ["src/pkg/parser.py"] # exact texts the view must still hold
    constraints: ["Do not change the public API."]
    derive: true                    # add the derived items (default: true when nothing is declared)
    counterfactuals: [{remove: summary}, {inject: "The tests live in tests/legacy/."}]
                                    # EVAL-2 runs of the final view (`nova.evaluation.counterfactual`)
    poisoning: builtin              # injection attempts against the memory: `builtin` (the 35-attempt
                                    # suite), a list of {via, payload, marker}, or both
                                    # (`nova.evaluation.scenarios`)
    memory: {memories: [...], turns: [{ask, answer}]}
                                    # a scripted memory scenario (`nova.evaluation.memory_scenario`)

`session` is required unless the case has `poisoning` or `memory`: those run without a recording (in
temporary homes and projects), and the keys that measure a replay (window, policies, provider_cache,
price, evidence, constraints, derive, counterfactuals) then need a session.

Derived items: every user message verbatim is a constraint; every modified path (the files the calls
write) and the last failing command with the last line of its error are evidence.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nova.context.summarize import failure_code, is_user_message
from nova.errors import FileRefused, NovaError
from nova.evaluation.case_keys import reject_unknown_keys
from nova.evaluation.counterfactual import Counterfactual, CounterfactualError, parse_counterfactual
from nova.evaluation.memory_scenario import MemoryScenario, parse_memory_scenario
from nova.evaluation.replay import ALL_POLICIES
from nova.evaluation.scenarios import PoisoningSpec, ScenarioError, parse_poisoning
from nova.fs.safe_read import loads, read_bytes
from nova.history.tool_paths import paths_of
from nova.messages import Message, ToolResultPart, ToolUsePart

__all__ = ["CaseError", "EvalCase", "derived_items", "load_cases", "work_items"]

_TAGS = re.compile(r"</?[a-z_]+>")  # a harness's wrappers (<returncode>, <output>, ...)


MAX_CASE_FILE_BYTES = 16 * 1024 * 1024
"""A case file names sessions and policies; one this large is not a case file."""


class CaseError(NovaError):
    """A case file that cannot be read or says something invalid."""


@dataclass(frozen=True, kw_only=True)
class EvalCase:
    name: str
    session: Path | None
    """None: a case with only `poisoning` or `memory`."""
    window: int = 128_000
    policies: tuple[str, ...] = ("nova",)
    provider_cache: str = "anthropic"
    price: str | None = None
    evidence: tuple[str, ...] = ()
    constraints: tuple[str, ...] = ()
    derive: bool = False
    counterfactuals: tuple[Counterfactual, ...] = ()
    poisoning: PoisoningSpec | None = None
    memory: MemoryScenario | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _strings(value: object, key: str, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise CaseError(f"{where}: {key} must be a list of non-empty strings")
    return tuple(value)


# The keys that measure a replay of the recorded session.
_REPLAY_KEYS = ("window", "policies", "provider_cache", "price", "evidence", "constraints", "derive", "counterfactuals")


def _scenarios(data: dict[str, Any], where: str) -> tuple[PoisoningSpec | None, MemoryScenario | None]:
    try:
        poisoning = parse_poisoning(data["poisoning"], where) if data.get("poisoning") is not None else None
        memory = parse_memory_scenario(data["memory"], where) if data.get("memory") is not None else None
    except ScenarioError as exc:
        raise CaseError(str(exc)) from None
    return poisoning, memory


def _case(data: object, base: Path, where: str) -> EvalCase:
    if not isinstance(data, dict):
        raise CaseError(f"{where}: a case is a mapping with at least `session`")
    reject_unknown_keys(data, sorted({"name", "session", "poisoning", "memory", *_REPLAY_KEYS}), where, CaseError)
    session = data.get("session")
    poisoning, memory = _scenarios(data, where)
    if session is None and (poisoning or memory):
        needs = [k for k in _REPLAY_KEYS if k in data]
        if needs:
            keys = ", ".join(f"`{k}`" for k in needs)
            raise CaseError(f"{where}: {keys} {'needs' if len(needs) == 1 else 'need'} a `session` (the recorded "
                            "session's path): only a replay of a recording uses it")
        return EvalCase(name=str(data.get("name") or where),
                        session=None, poisoning=poisoning, memory=memory)
    if not isinstance(session, str) or not session:
        raise CaseError(f"{where}: `session` (the recorded session's path) is required, unless the case has "
                        "`poisoning` or `memory`")
    path = Path(session).expanduser()
    path = path if path.is_absolute() else base / path
    policies = data.get("policies", ["nova"])
    if isinstance(policies, str):
        policies = [policies]
    if not isinstance(policies, list) or not policies or any(p not in ALL_POLICIES for p in policies):
        raise CaseError(f"{where}: policies must be a list of {', '.join(ALL_POLICIES)}")
    window = data.get("window", 128_000)
    if not isinstance(window, int) or isinstance(window, bool) or window <= 0:
        raise CaseError(f"{where}: window must be a positive number of tokens")
    cache = data.get("provider_cache", "anthropic")
    if cache not in ("anthropic", "openai"):
        raise CaseError(f"{where}: provider_cache must be anthropic or openai")
    price = data.get("price")
    if price is not None and not isinstance(price, str):
        raise CaseError(f"{where}: price must be a model name")
    evidence = _strings(data.get("evidence"), "evidence", where)
    constraints = _strings(data.get("constraints"), "constraints", where)
    derive = data.get("derive", not evidence and not constraints)
    if not isinstance(derive, bool):
        raise CaseError(f"{where}: derive must be true or false")
    changes = data.get("counterfactuals") or []
    if not isinstance(changes, list):
        raise CaseError(f"{where}: counterfactuals must be a list")
    try:
        counterfactuals = tuple(parse_counterfactual(c, f"{where} counterfactual {i + 1}") for i, c in enumerate(changes))
    except CounterfactualError as exc:
        raise CaseError(str(exc)) from None
    return EvalCase(name=str(data.get("name") or path.name), session=path, window=window, policies=tuple(policies),
                    provider_cache=cache, price=price, evidence=evidence, constraints=constraints, derive=derive,
                    counterfactuals=counterfactuals, poisoning=poisoning, memory=memory)


def load_cases(path: Path) -> list[EvalCase]:
    """The cases of a JSON or YAML case file (PyYAML comes with python-frontmatter, a core dependency)."""
    try:
        text = read_bytes(path, limit=MAX_CASE_FILE_BYTES, what="a case file").decode("utf-8")
    except OSError as exc:
        raise CaseError(f"cannot read case file {path}: {exc.strerror or exc}") from exc
    except FileRefused as exc:
        raise CaseError(f"case file: {exc}") from None
    except UnicodeDecodeError:
        raise CaseError(f"case file {path} is not UTF-8 text: give a JSON or YAML case file") from None
    data: object
    if path.suffix.lower() in (".yaml", ".yml"):
        try:
            import yaml
        except ImportError as exc:
            raise CaseError(f"{path.name}: YAML case files need PyYAML (pip install pyyaml); "
                            "or write the case as JSON") from exc
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise CaseError(f"{path.name}: not valid YAML: {exc}") from exc
        except RecursionError:  # the loader recurses once per level of nesting
            raise CaseError(f"{path.name}: nested too deeply to read; flatten it") from None
    else:
        try:
            data = loads(text, where=path.name)
        except json.JSONDecodeError as exc:
            raise _a_session(path) or CaseError(f"{path.name}: not valid JSON: {exc}") from exc
        except ValueError as exc:  # nested too deeply, or a number beyond Python's digit limit
            raise CaseError(f"{path.name}: {exc}") from None
    if not isinstance(data, dict) or not {"cases", "session", "poisoning", "memory"} & data.keys():
        # Not the shape of a case file: a recorded session given in its place is named as one.
        error = _a_session(path)
        if error is not None:
            raise error
    items = data.get("cases") if isinstance(data, dict) and "cases" in data else [data]
    if not isinstance(items, list) or not items:
        raise CaseError(f"{path.name}: `cases` must be a non-empty list")
    return [_case(item, path.parent, f"{path.name} case {i + 1}") for i, item in enumerate(items)]


def _a_session(path: Path) -> CaseError | None:
    """The error for a recorded session given where a case file goes (its JSONL is no JSON document, its
    list of messages no list of cases), or None when no session reader takes the file."""
    from nova.sessions.importers import detect_format

    try:
        format_name = detect_format(path)
    except NovaError:
        return None
    return CaseError(f"{path.name} is a recorded session ({format_name}), not a case file: replay it with "
                     f"`nova replay {path}`, or name it in a case file (`session: {path.name}`, "
                     "see docs/eval.md)")


def work_items(messages: Sequence[Message]) -> tuple[list[str], tuple[str, str] | None]:
    """(the paths the session's calls wrote, in order; its last failing command with the last line of
    that command's error, or None). The files a call writes come from the one declared map of tools
    (shell redirects, `sed -i`, `tee`, editor commands): a name inside a heredoc's body is not one."""
    calls: dict[str, ToolUsePart] = {}
    modified: dict[str, None] = {}
    failing: tuple[str, str] | None = None
    for m in messages:
        for part in m.parts:
            if isinstance(part, ToolUsePart):
                calls[part.id] = part
                modified.update(dict.fromkeys(paths_of(part).writes))
            elif isinstance(part, ToolResultPart) and failure_code(part) is not None:
                call = calls.get(part.tool_use_id)
                lines = [x.strip() for x in _TAGS.sub("", part.content).splitlines() if x.strip()]
                command = call.input.get("command") if call is not None else None
                if isinstance(command, str) and lines:
                    failing = (command.strip(), lines[-1][:200])
    return list(modified), failing


def derived_items(messages: Sequence[Message]) -> tuple[list[str], list[str]]:
    """(evidence, constraints) a session requires without being told: its modified paths and last failing
    command with the last line of its error; every user message verbatim."""
    constraints = [m.text for m in messages if is_user_message(m)]
    modified, failing = work_items(messages)
    evidence = [*modified, *(failing or ())]
    return [e for e in evidence if e], [c for c in constraints if c]
