"""May this tool call run? Decided before the tool starts, by rules the model cannot change.

Rules come from the `permissions` section of the config (`allow`, `deny`, `ask`) and are written `TOOL`
or `TOOL(pattern)`: `bash(git push*)`, `write_file(src/*)`, `read_file(.env)`. The pattern is an
fnmatch pattern (case-sensitive; `*` also matches `/`) tested against the call's key argument:

- `bash`: the command line, and each sub-command of it split on `&&`, `||`, `;`, `|`, `&` and newlines
  (quote-aware), plus the commands inside `$(...)`, backticks and `bash -c '...'`. A deny or ask rule
  matches when any sub-command matches, so `cd x && git push` is caught by `bash(git push*)`; an allow
  rule only applies when every sub-command is allowed, so `bash(git status*)` does not let
  `git status; rm -rf ~` through.
- `read_file`, `write_file`, `edit_file`, `grep`, `glob`: the path relative to the working directory
  (absolute when outside it). Deny and ask rules also see the symlink-resolved path; allow rules see
  only the resolved path, so a link cannot smuggle a write past them.

Reading tools share one path policy (nova.agent.read_policy): a path rule written for `read_file`,
`grep` or `glob` applies to all three (deny and ask rules also to `edit_file`, which shows what it
changed), reads outside the workspace and of secret-looking files (`.env`, keys, `~/.ssh`) need approval,
and a directory search leaves out the files a rule denies or that would need approval, saying so.

Precedence: deny > allow > ask > default. By default read-only tools run (reads outside the workspace or
of secret-looking files ask, as above); tools that write or run commands ask the user in an interactive
session, and in a headless run are allowed only with `--yes` or `--allow TOOL`. A decision that needs the
user and cannot get one is a denial.

Protected paths come first of all: Nova's own configuration, policy, instruction files, memory and
`.nova/` folders are never written by a model tool, whatever the rules, `--yes` or `--allow` say, so the
model cannot rewrite the rules it runs under (a forged allow rule, policy or memory would take effect in
the next session).

Pattern rules on `bash` are a guard rail against the model's usual habits, not a sandbox: a command
can always hide what it does (`eval`, a script file). The model cannot change the policy: it is
immutable, and no tool receives it.
"""

from __future__ import annotations

import fnmatch
import json
import logging
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from nova.agent.read_policy import FileScreen, RuleHit, read_concern, rule_tool_names
from nova.agent.tools.base import Tool, ToolContext, ToolOutput
from nova.errors import ConfigError, ToolError
from nova.settings import PermissionsConfig

__all__ = [
    "Decision",
    "PermissionPolicy",
    "PermissionRequest",
    "ProtectedPaths",
    "Rule",
    "parse_rule",
    "run_tool_checked",
    "split_shell_command",
]

log = logging.getLogger(__name__)

PATH_TOOLS = {"read_file": None, "write_file": None, "edit_file": None, "grep": ".", "glob": "."}
"""Tools whose key argument is `path`, with the default used when the call leaves it out."""


# -- rules ------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Rule:
    tool: str
    """A tool name, or an fnmatch pattern over tool names (`mcp__github__*`)."""
    pattern: str | None
    text: str

    def __str__(self) -> str:
        return self.text


_RULE_RE = re.compile(r"^\s*([^\s()]+)\s*(?:\((.*)\))?\s*$", re.DOTALL)


def parse_rule(text: str, *, where: str = "permissions") -> Rule:
    match = _RULE_RE.match(text)
    if match is None or (match.group(2) is not None and not match.group(2).strip()):
        raise ConfigError(
            f"{where}: rule {text!r} is not `TOOL` or `TOOL(pattern)`, e.g. `bash(git push*)` or `write_file`"
        )
    pattern = match.group(2)
    return Rule(tool=match.group(1), pattern=pattern.strip() if pattern is not None else None, text=text.strip())


# -- what a rule is matched against -------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _Unit:
    """One thing the call does (a sub-command, a path), seen two ways."""

    strict: tuple[str, ...]
    """Forms an allow rule must match: the canonical ones, that cannot be dressed up."""
    loose: tuple[str, ...]
    """Forms a deny or ask rule may match: every spelling, so a rule is hard to sidestep."""


_SEPARATORS = ("&&", "||", ";", "|", "&", "\n")
_WRAPPERS = frozenset(
    {"sudo", "env", "command", "builtin", "exec", "nohup", "time", "nice", "then", "do", "else", "if",
     "elif", "while", "until", "!"}
)
_ASSIGNMENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_SHELL_C_RE = re.compile(r"^(?:bash|sh|zsh|dash)\s+(?:-\w+\s+)*-c\s+(.+)$", re.DOTALL)


def _closing_paren(text: str, start: int) -> int:
    """Index of the `)` that closes the `(` before `start`, or len(text) if it never closes."""
    depth, quote, i = 1, "", start
    while i < len(text):
        c = text[i]
        if quote:
            if c == quote:
                quote = ""
            elif c == "\\" and quote == '"':
                i += 1
        elif c in "'\"":
            quote = c
        elif c == "\\":
            i += 1
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return len(text)


def _is_redirection_amp(text: str, i: int) -> bool:
    """`2>&1`, `>&2`, `&>file`: an `&` that belongs to a redirection, not a background separator."""
    before = text[i - 1] if i > 0 else ""
    after = text[i + 1] if i + 1 < len(text) else ""
    return before in "<>" or after == ">"


def _split_top(command: str) -> tuple[list[str], list[str]]:
    """Top-level sub-commands and the bodies of command substitutions, honouring quotes."""
    parts: list[str] = []
    nested: list[str] = []
    buf: list[str] = []
    quote = ""
    i = 0
    while i < len(command):
        c = command[i]
        if quote == "'":
            buf.append(c)
            quote = "" if c == "'" else quote
            i += 1
            continue
        if c == "\\" and i + 1 < len(command):
            buf.append(command[i : i + 2])
            i += 2
            continue
        if command.startswith("$(", i):  # runs even inside double quotes
            end = _closing_paren(command, i + 2)
            nested.append(command[i + 2 : end])
            buf.append(command[i : end + 1])
            i = end + 1
            continue
        if c == "`":
            end = command.find("`", i + 1)
            end = len(command) if end == -1 else end
            nested.append(command[i + 1 : end])
            buf.append(command[i : end + 1])
            i = end + 1
            continue
        if quote == '"':
            buf.append(c)
            quote = "" if c == '"' else quote
            i += 1
            continue
        if c in "'\"":
            quote = c
            buf.append(c)
            i += 1
            continue
        sep = next((s for s in _SEPARATORS if command.startswith(s, i)), None)
        if sep == "|" and i > 0 and command[i - 1] == ">":  # `>|` is a redirection
            sep = None
        if sep == "&" and _is_redirection_amp(command, i):
            sep = None
        if sep is not None:
            parts.append("".join(buf))
            buf = []
            i += len(sep)
            continue
        buf.append(c)
        i += 1
    parts.append("".join(buf))
    return parts, nested


def _tidy(unit: str) -> str:
    """Collapse whitespace and drop the grouping of `(cd x; make)` / `{ a; b; }` left by splitting."""
    unit = " ".join(unit.split())
    while unit.startswith("(") and unit.count("(") > unit.count(")"):
        unit = unit[1:].lstrip()
    while unit.endswith(")") and unit.count(")") > unit.count("("):
        unit = unit[:-1].rstrip()
    if unit.startswith("{ "):
        unit = unit[2:]
    if unit == "}" or unit.endswith(" }"):
        unit = unit[:-1].rstrip()
    return unit


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _bare(unit: str) -> str:
    """The command with leading `VAR=value` assignments and wrappers (`sudo`, `env`, `nohup`, `then`, ...)
    removed: what actually runs, for deny rules to see."""
    words = unit.split(" ")
    while words:
        word = words[0]
        if _ASSIGNMENT_RE.match(word) or word in _WRAPPERS or (word.startswith("-") and len(words) > 1):
            words.pop(0)
            continue
        break
    return " ".join(words)


def split_shell_command(command: str, *, _depth: int = 0) -> list[str]:
    """The sub-commands a shell command line runs, whitespace-normalized, in order: top-level pieces
    split on `&&`, `||`, `;`, `|`, `&` and newlines, then the insides of `$(...)`, backticks and
    `bash -c '...'`. Splitting errs towards more pieces: for deny rules that means more chances to
    match, for allow rules more pieces that each must be allowed."""
    parts, nested = _split_top(command)
    units = [u for u in (_tidy(p) for p in parts) if u]
    if _depth < 5:  # nesting this deep is adversarial; stop rather than recurse without bound
        inner: list[str] = []
        for unit in units:
            shell_c = _SHELL_C_RE.match(_bare(unit))
            if shell_c:
                inner.extend(split_shell_command(_unquote(shell_c.group(1)), _depth=_depth + 1))
        for body in nested:
            inner.extend(split_shell_command(body, _depth=_depth + 1))
        units.extend(inner)
    return units


def _bash_units(command: str) -> list[_Unit]:
    units: list[_Unit] = []
    for unit in split_shell_command(command):
        bare = _bare(unit)
        loose = (unit, bare) if bare and bare != unit else (unit,)
        units.append(_Unit(strict=(unit,), loose=loose))
    whole = " ".join(command.split())
    if units and whole not in units[0].loose:
        # The whole line is also a candidate for deny/ask (`bash(*--force*)` written against it).
        units.append(_Unit(strict=(), loose=(whole,)))
    return units


def _relative(path: Path, base: Path) -> str | None:
    try:
        return path.relative_to(base).as_posix() or "."
    except ValueError:
        return None


def _path_units(raw: str, cwd: Path) -> list[_Unit]:
    given = Path(raw).expanduser()
    lexical = Path(os.path.normpath(given if given.is_absolute() else cwd / given))
    real = Path(os.path.realpath(lexical))
    real_cwd = Path(os.path.realpath(cwd))
    strict = [_relative(real, real_cwd), real.as_posix()]
    loose = [_relative(lexical, cwd), lexical.as_posix(), *strict]
    return [_Unit(strict=_unique(strict), loose=_unique(loose))]


def _unique(forms: Iterable[str | None]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(f for f in forms if f is not None))


def _units_for(tool_name: str, input: Mapping[str, Any], cwd: Path) -> list[_Unit]:
    """What pattern rules are matched against; empty when the call has no usable key argument (then
    only bare `TOOL` rules apply, and the tool itself rejects the call)."""
    if tool_name == "bash":
        command = input.get("command")
        return _bash_units(command) if isinstance(command, str) and command.strip() else []
    if tool_name in PATH_TOOLS:
        raw = input.get("path", PATH_TOOLS[tool_name])
        return _path_units(raw, cwd) if isinstance(raw, str) and raw.strip() else []
    return []


def _rule_matches(rule: Rule, tool_name: str, forms: Iterable[str], *, allow: bool = False) -> bool:
    if rule.pattern is None:
        return fnmatch.fnmatchcase(tool_name, rule.tool)
    # Path rules of the reading tools are shared among them (nova.agent.read_policy).
    if not any(fnmatch.fnmatchcase(name, rule.tool) for name in rule_tool_names(tool_name, allow=allow)):
        return False
    return any(fnmatch.fnmatchcase(f, rule.pattern) for f in forms)


# -- protected paths ----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ProtectedPaths:
    """What no model tool may write: every path under `dirs`, the files in `files`, and any file whose
    name is in `names` wherever it lies (instruction files are read from nested folders too)."""

    dirs: tuple[Path, ...] = ()
    files: tuple[Path, ...] = ()
    names: frozenset[str] = frozenset()

    def reason(self, raw: str, cwd: Path) -> str | None:
        """Why writing `raw` (relative to `cwd`) is refused, or None. Both the path as written and its
        symlink-resolved form are checked, so a link cannot lead a write into a protected place."""
        given = Path(raw).expanduser()
        lexical = Path(os.path.normpath(given if given.is_absolute() else cwd / given))
        for candidate in dict.fromkeys((lexical, Path(os.path.realpath(lexical)))):
            if candidate.name in self.names:
                return f"{candidate.name} is an instruction file Nova loads as rules"
            for protected in self.files:
                if candidate == protected or candidate == Path(os.path.realpath(protected)):
                    return f"{protected} is one of Nova's protected files"
            for folder in self.dirs:
                for form in dict.fromkeys((folder, Path(os.path.realpath(folder)))):
                    if candidate == form or form in candidate.parents:
                        return f"{folder} holds Nova's own configuration, rules or memory"
        return None


# -- decisions ----------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    reason: str
    """For a denial this is what the model reads: what was refused and what would allow it."""
    rule: str | None = None
    """The config rule that decided, if one did."""


@dataclass(frozen=True, kw_only=True)
class PermissionRequest:
    """What the `ask` callback is shown when a call needs the user's approval."""

    tool: str
    input: Mapping[str, Any] = field(default_factory=dict)
    summary: str
    """One line for a prompt, e.g. `bash: git push origin main`."""
    reason: str
    """Why the user is asked: an `ask` rule, or the default for tools that change things."""
    rule: str | None = None


def _summary(tool_name: str, input: Mapping[str, Any]) -> str:
    if tool_name == "bash" and isinstance(input.get("command"), str):
        return f"bash: {input['command']}"
    if tool_name in PATH_TOOLS and isinstance(input.get("path"), str):
        return f"{tool_name}: {input['path']}"
    text = json.dumps(dict(input), ensure_ascii=False, default=str)
    return f"{tool_name}: {text if len(text) <= 200 else text[:197] + '...'}"


AskUser = Callable[[PermissionRequest], bool]


class PermissionPolicy:
    """The permission rules of one session. Immutable: built once from config and flags."""

    __slots__ = ("_allow", "_allowed_tools", "_ask", "_ask_user", "_cwd", "_deny", "_dynamic_deny", "_interactive",
                 "_protected", "_read_roots", "_yes")

    _allow: tuple[Rule, ...]
    _deny: tuple[Rule, ...]
    _ask: tuple[Rule, ...]
    _interactive: bool
    _allowed_tools: frozenset[str]
    _yes: bool
    _ask_user: AskUser | None
    _cwd: Path
    _dynamic_deny: Callable[[], Iterable[str]] | None
    _protected: ProtectedPaths
    _read_roots: tuple[Path, ...]

    def __init__(
        self,
        config: PermissionsConfig,
        *,
        interactive: bool,
        allowed_tools: frozenset[str] = frozenset(),
        yes: bool = False,
        ask: AskUser | None = None,
        cwd: Path | None = None,
        dynamic_deny: Callable[[], Iterable[str]] | None = None,
        protected: ProtectedPaths | None = None,
        read_roots: Iterable[Path] = (),
    ) -> None:
        """`cwd` is the directory path rules are relative to (default: the process's, at construction);
        `run_tool_checked` uses the tool context's instead. Bad rules raise `ConfigError`.
        `dynamic_deny` returns extra deny rules read at every check: the ones canonical task state derives
        from the user's constraints ("merge not approved" → `bash(git merge*)`, nova.context.state). They
        take effect on the next call, without waiting for the model to read anything; the model cannot
        change them (task state is written only by deterministic code). `protected` are the paths no
        tool that writes may touch, whatever else is allowed. `read_roots` are folders besides the working
        directory that reading tools may read without asking (the project root, the session's folder)."""
        values = {
            "_allow": tuple(parse_rule(r, where="permissions.allow") for r in config.allow),
            "_deny": tuple(parse_rule(r, where="permissions.deny") for r in config.deny),
            "_ask": tuple(parse_rule(r, where="permissions.ask") for r in config.ask),
            "_interactive": interactive,
            "_allowed_tools": frozenset(allowed_tools),
            "_yes": yes,
            "_ask_user": ask,
            "_cwd": cwd if cwd is not None else Path.cwd(),
            "_dynamic_deny": dynamic_deny,
            "_protected": protected or ProtectedPaths(),
            "_read_roots": tuple(read_roots),
        }
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("PermissionPolicy is immutable; build a new one from config and flags")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("PermissionPolicy is immutable")

    def __repr__(self) -> str:
        return (
            f"PermissionPolicy(allow={[r.text for r in self._allow]}, deny={[r.text for r in self._deny]}, "
            f"ask={[r.text for r in self._ask]}, interactive={self._interactive}, "
            f"allowed_tools={sorted(self._allowed_tools)}, yes={self._yes})"
        )

    @property
    def interactive(self) -> bool:
        return self._interactive

    @property
    def cwd(self) -> Path:
        return self._cwd

    def check(self, tool: Tool, input: Mapping[str, Any], *, cwd: Path | None = None) -> Decision:
        name = tool.name
        where = cwd or self._cwd
        if not tool.read_only and name in PATH_TOOLS:
            raw = input.get("path")
            why = self._protected.reason(raw, where) if isinstance(raw, str) and raw.strip() else None
            if why is not None:
                return Decision(False, f"{_summary(name, input)!r} is refused: {why}, and no tool may change it "
                                       "(edit it yourself outside Nova if it must change).", "protected")
        units = _units_for(name, input, where)

        denied = self._match_any(self._deny, name, units)
        if denied is not None:
            return Decision(False, f"{_summary(name, input)!r} is refused by the deny rule `{denied}`.", denied.text)
        if self._dynamic_deny is not None:
            rules = tuple(parse_rule(r, where="task state") for r in self._dynamic_deny())
            denied = self._match_any(rules, name, units)
            if denied is not None:
                return Decision(False, f"{_summary(name, input)!r} is refused by the task-state rule `{denied}`: "
                                       "the user has not approved this action (ask them; /approve records it).",
                                denied.text)

        allowed = self._match_all(name, units)
        if allowed is not None:
            return Decision(True, f"allowed by the rule `{allowed}`", allowed)

        ask_rule = self._match_any(self._ask, name, units)
        if ask_rule is None and tool.read_only:
            raw = input.get("path", PATH_TOOLS.get(name))
            concern = read_concern(name, raw, cwd=where, roots=self._read_roots) if isinstance(raw, str) else None
            if concern is None:
                return Decision(True, "read-only tool")
            return self._needs_approval(name, input, None, why=concern)
        return self._needs_approval(name, input, ask_rule)

    def file_screen(self, tool_name: str, *, cwd: Path | None = None) -> FileScreen:
        """How a directory search by `tool_name` screens each file it meets: these path rules, this
        workspace (nova.agent.read_policy). Rules are matched per file only when there are path rules."""
        where = cwd or self._cwd
        dynamic = tuple(parse_rule(r, where="task state") for r in self._dynamic_deny()) if self._dynamic_deny else ()
        groups: tuple[tuple[Literal["deny", "ask", "allow"], tuple[Rule, ...]], ...] = (
            ("deny", (*self._deny, *dynamic)), ("ask", self._ask), ("allow", self._allow))
        relevant = [(kind, tuple(r for r in group if r.pattern is not None)) for kind, group in groups]
        roots = (where, *self._read_roots)
        if not any(group for _, group in relevant):
            return FileScreen(roots=roots)

        def lookup(path: Path) -> RuleHit | None:
            units = _path_units(str(path), where)
            for kind, group in relevant:
                allow = kind == "allow"
                forms = [f for u in units for f in (u.strict if allow else u.loose)]
                rule = next((r for r in group if _rule_matches(r, tool_name, forms, allow=allow)), None)
                if rule is not None:
                    return RuleHit(kind, rule.text)
            return None

        return FileScreen(roots=roots, lookup=lookup)

    # -- helpers ----------------------------------------------------------------------------------
    @staticmethod
    def _match_any(rules: tuple[Rule, ...], name: str, units: list[_Unit]) -> Rule | None:
        forms = [f for u in units for f in u.loose]
        return next((r for r in rules if _rule_matches(r, name, forms)), None)

    def _match_all(self, name: str, units: list[_Unit]) -> str | None:
        """The allow rule(s) covering the call: a bare `TOOL` rule, or pattern rules that together
        cover every unit (each sub-command of a compound command must be allowed on its own)."""
        bare = next((r for r in self._allow if r.pattern is None and _rule_matches(r, name, ())), None)
        if bare is not None:
            return bare.text
        strict_units = [u for u in units if u.strict]
        if not strict_units:
            return None
        used: list[str] = []
        for unit in strict_units:
            rule = next((r for r in self._allow if _rule_matches(r, name, unit.strict, allow=True)), None)
            if rule is None:
                return None
            if rule.text not in used:
                used.append(rule.text)
        return ", ".join(used)

    def _needs_approval(self, name: str, input: Mapping[str, Any], ask_rule: Rule | None, *,
                        why: str | None = None) -> Decision:
        rule_text = ask_rule.text if ask_rule else None
        if self._yes:
            return Decision(True, "allowed by --yes", rule_text)
        if name in self._allowed_tools:
            return Decision(True, f"allowed by --allow {name}", rule_text)
        if why is None:
            why = f"the ask rule `{ask_rule}` matches" if ask_rule else f"{name} can change files or run commands"
        if not self._interactive:
            return Decision(
                False,
                f"{name} needs approval ({why}) and this run is not interactive. Pass `--allow {name}` "
                f"(or `--yes` to allow every tool) to permit it, or add an allow rule such as "
                f"`{name}(...)` to `permissions.allow` in the config.",
                rule_text,
            )
        if self._ask_user is None:
            return Decision(False, f"{name} needs the user's approval ({why}) but no one can be asked.", rule_text)
        request = PermissionRequest(
            tool=name, input=MappingProxyType(dict(input)), summary=_summary(name, input), reason=why,
            rule=rule_text,
        )
        try:
            approved = bool(self._ask_user(request))
        except Exception:
            # A broken prompt must fail closed: no answer is not a yes.
            log.exception("the permission prompt failed; treating it as a refusal")
            approved = False
        if approved:
            return Decision(True, "approved by the user", rule_text)
        return Decision(False, f"the user declined {_summary(name, input)!r}. Ask them or try another way.",
                        rule_text)


def run_tool_checked(
    policy: PermissionPolicy, tool: Tool, input: Mapping[str, Any], ctx: ToolContext
) -> ToolOutput:
    """Check, then run: a denied call returns an error result and the tool is never started. Path rules
    are taken relative to `ctx.cwd`, where the tool will run."""
    decision = policy.check(tool, input, cwd=ctx.cwd)
    ctx = replace(ctx, screen=policy.file_screen(tool.name, cwd=ctx.cwd))
    if not decision.allowed:
        return ToolOutput(
            content=f"Permission denied: {decision.reason}",
            is_error=True,
            metadata={"permission": "denied", "reason": decision.reason, "rule": decision.rule},
        )
    try:
        return tool.run(input, ctx)
    except ToolError as exc:
        return ToolOutput(content=f"Error: {exc}", is_error=True)

