"""May this tool call run? Decided before the tool starts, by rules the model cannot change.

Rules come from the `permissions` section of the config (`allow`, `deny`, `ask`) and are written `TOOL`
or `TOOL(pattern)`: `bash(git push*)`, `write_file(src/*)`, `read_file(.env)`. The pattern is an
fnmatch pattern (case-sensitive; `*` also matches `/`) tested against the call's key argument:

- `bash`: every simple command the line runs, as a real shell parser finds them (nova.tools.policy.shell_parse:
  pipelines, lists, subshells, command and process substitutions, `bash -c '...'`, ...), normalized
  (quotes and escapes removed, wrappers such as `env`, `timeout`, `sudo` peeled, `/usr/bin/git` read as
  `git`, git's global options skipped). A deny or ask rule matches when any command matches in any of
  its spellings, so `cd x && timeout 5 git -C . push` is caught by `bash(git push*)`; an allow rule only
  applies when every command is allowed as written, so `bash(git status*)` does not let
  `git status; rm -rf ~` through. A command the parser cannot resolve before it runs (`eval`,
  `bash -c "$x"`, `$cmd push`, a script) is never allowed by a rule: the user is asked, and when deny
  rules apply to bash, `--yes` and `--allow bash` do not cover it.
- `read_file`, `write_file`, `edit_file`, `grep`, `glob`: the path relative to the working directory
  (absolute when outside it). Deny and ask rules also see the symlink-resolved path; allow rules see
  only the resolved path, so a link cannot smuggle a write past them.
- MCP tools (`mcp__server__tool`, nova.mcp): the call's arguments as compact JSON with sorted keys, so
  `mcp__github__create_issue(*"repo":"nova"*)` matches by argument and `mcp__github__*` names a whole
  server. `mcp_call` is checked as the tool it calls.

Reading tools share one path policy (nova.tools.policy.read_policy): a path rule written for `read_file`,
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
the next session). For `bash` that covers the writes the parser can see: redirections, `tee`, `cp`,
`mv`, `rm`, `sed -i`, `perl -pi`, editors, `git checkout -- FILE`, archives unpacked, ... (through globs,
variables set in the line and environment variables). A bash line that runs one of Nova's own control
commands (`nova config set`, `nova memory approve`, ...: nova.tools.policy.controls) or names a path in
Nova's home is refused the same way, and no tool reads the server token.

Before any allow rule: a bash line that writes outside the workspace, or to a place only the running
command knows, needs approval (`echo x > ~/.bashrc` is not allowed by `bash(echo*)`); and where no
sandbox can run although the user did not turn it off (`unconfined`), so does every line that is not
read-only.

Pattern rules on `bash` are the first, explainable layer, not the boundary: a program can still write
or run what its arguments do not show (`python script.py`). The sandbox (nova.tools.policy.sandbox) is
the boundary. The model cannot change the policy: it is immutable, and no tool receives it.
"""

from __future__ import annotations

import fnmatch
import glob
import itertools
import json
import logging
import os
import re
import tarfile
import zipfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from nova.errors import ConfigError, ToolError
from nova.fs.special_files import special_kind
from nova.settings import PermissionsConfig
from nova.tools.approval import Answer, Approver, NoAnswer, PermissionRequest, answer_of
from nova.tools.base import Tool, ToolContext, ToolOutput, resolve_delegate
from nova.tools.change_preview import change_diff
from nova.tools.policy.controls import control_command
from nova.tools.policy.read_policy import FileScreen, RuleHit, read_concern, rule_tool_names
from nova.tools.policy.shell_parse import (
    NULL_SINKS,
    ShellCommand,
    ShellLine,
    ShellWrite,
    could_match_longer,
    parse_command_line,
)

__all__ = [
    "Decision",
    "PermissionPolicy",
    "PermissionRequest",
    "ProtectedPaths",
    "Rule",
    "Verdict",
    "parse_rule",
    "run_tool_checked",
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
    open_prefixes: tuple[str, ...] = ()
    """Beginnings whose rest is known only at run time (`git $x`, `xargs git`): a deny or ask rule
    matches if it could match something that starts so."""


def _bash_units(line: ShellLine, command: str) -> list[_Unit]:
    """One unit per command the line runs (an unresolved one has no strict form: no rule may allow it),
    plus the whole line for deny and ask rules written against it (`bash(*--force*)`)."""
    units = [_Unit(strict=() if c.unresolved else (c.exact,), loose=c.forms, open_prefixes=c.open_prefixes)
             for c in line.commands]
    units.append(_Unit(strict=(), loose=(" ".join(command.split()),)))
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
    if tool_name in PATH_TOOLS:
        raw = input.get("path", PATH_TOOLS[tool_name])
        return _path_units(raw, cwd) if isinstance(raw, str) and raw.strip() else []
    if tool_name.startswith("mcp__"):
        # An MCP tool's arguments as canonical JSON: `mcp__github__create_issue(*"repo":"nova"*)`.
        form = json.dumps(dict(input), sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
        return [_Unit(strict=(form,), loose=(form,))]
    return []


def _rule_matches(rule: Rule, tool_name: str, forms: Iterable[str], *, allow: bool = False) -> bool:
    if rule.pattern is None:
        return fnmatch.fnmatchcase(tool_name, rule.tool)
    # Path rules of the reading tools are shared among them (nova.tools.policy.read_policy).
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
    home: Path | None = None
    """Nova's home: no command may name a path in it at all, to read it or to write it (it holds the
    config, the memory ledger, the session store and the server token)."""
    unreadable: tuple[Path, ...] = ()
    """Files no tool may read either (the server token: whoever holds it may approve calls and memories)."""

    def reason(self, raw: str, cwd: Path) -> str | None:
        """Why writing `raw` (relative to `cwd`) is refused, or None. Both the path as written and its
        symlink-resolved form are checked, so a link cannot lead a write into a protected place. A glob
        (`NOVA.m?`, `*.md`) is refused when it could name a protected file, or names one now."""
        if _GLOB_CHARS.intersection(raw):
            return self._glob_reason(raw, cwd)
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

    def _glob_reason(self, raw: str, cwd: Path) -> str | None:
        pattern = os.path.normpath(os.path.join(cwd, os.path.expanduser(raw)))
        for name in self.names:
            if fnmatch.fnmatchcase(name, os.path.basename(pattern)):
                return f"the pattern {raw} matches {name}, an instruction file Nova loads as rules"
        for path in (*self.files, *self.dirs):
            for form in dict.fromkeys((str(path), os.path.realpath(path))):
                if fnmatch.fnmatchcase(form, pattern) or any(
                        fnmatch.fnmatchcase(str(parent), pattern) for parent in Path(form).parents):
                    return f"the pattern {raw} matches {path}, one of Nova's protected files"
        for found in itertools.islice(glob.iglob(pattern, recursive="**" in pattern), MAX_GLOB_MATCHES):
            why = self.reason(glob.escape(found), cwd)
            if why is not None:
                return why
        return None

    def names_home(self, raw: str, cwd: Path) -> bool:
        """Whether the path `raw` lies in Nova's home (unless the workspace itself is in it)."""
        if self.home is None:
            return False
        raw = expand_environment(raw.replace('"', "")) or raw
        given = Path(_HOME_VAR_RE.sub("~", raw)).expanduser()
        lexical = Path(os.path.normpath(given if given.is_absolute() else cwd / given))
        home = Path(os.path.realpath(self.home))
        if _inside(Path(os.path.realpath(cwd)), home):
            return False
        return any(_inside(c, h) for c in (lexical, Path(os.path.realpath(lexical)))
                   for h in dict.fromkeys((self.home, home)))

    def read_reason(self, raw: str, cwd: Path) -> str | None:
        given = Path(raw).expanduser()
        target = Path(os.path.realpath(given if given.is_absolute() else cwd / given))
        for path in self.unreadable:
            if target == Path(os.path.realpath(path)):
                return f"{path} is Nova's server token, which no tool may read"
        return None


def expand_environment(text: str) -> str | None:
    """`text` with `$NAME` and `${NAME}` replaced from this process's environment (which a command's
    shell inherits), or None when something is left that only the running shell knows."""
    expanded = os.path.expandvars(text)
    return None if "$" in expanded or "`" in expanded else expanded


_GLOB_CHARS = frozenset("*?[")
_HOME_VAR_RE = re.compile(r"^\$(?:HOME\b|\{HOME\})")
MAX_GLOB_MATCHES = 1000


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _known_writes(line: ShellLine, *, keep_unknown: bool = False) -> list[ShellWrite]:
    """The line's writes, those through environment variables (`> "$NOVA_HOME/config.json"`) resolved
    as the command's shell will resolve them; the rest of those known only at run time are dropped, or
    kept (`keep_unknown`) for the caller to ask about."""
    known: list[ShellWrite] = []
    for write in line.writes:
        if write.dynamic and "$" in write.path:
            expanded = expand_environment(write.path.replace('"', ""))
            if expanded is not None:
                write = replace(write, path=expanded, dynamic=False)
        if not write.dynamic or keep_unknown:
            known.append(write)
    return known


def _static_dir(folder: str) -> bool:
    return "`" not in folder and "$" not in _HOME_VAR_RE.sub("~", folder)


def _bases(line: ShellLine, where: Path) -> list[Path]:
    """Where relative paths of a line may be relative to: the working directory, and every folder a
    `cd` in the line may have moved to."""
    return [where, *(where / Path(_HOME_VAR_RE.sub("~", d)).expanduser() for d in line.dirs if _static_dir(d))]


MAX_ARCHIVE_MEMBERS = 10_000
MAX_TAR_BYTES = 64 * 1024 * 1024
"""A tar archive is listed by reading it through (a zip has a directory at its end): past this size the
check would cost more than it is worth, and the command is asked about instead."""


def _archive_members(path: Path, kind: str) -> list[str] | None:
    """The names an archive would unpack, or None when it cannot be read here (missing, not an archive,
    more than `MAX_ARCHIVE_MEMBERS` entries, a tar past `MAX_TAR_BYTES`): then where it writes is not
    known before it runs."""
    try:
        if not path.is_file() or special_kind(path.stat().st_mode) is not None:
            return None
        if kind != "zip" and path.stat().st_size > MAX_TAR_BYTES:
            return None
        if kind == "zip":
            with zipfile.ZipFile(path) as archive:
                names = archive.namelist()
        else:
            with tarfile.open(path) as tar:
                names = []
                for member in tar:
                    names.append(member.name)
                    if len(names) > MAX_ARCHIVE_MEMBERS:
                        return None
    except (OSError, zipfile.BadZipFile, tarfile.TarError, EOFError, ValueError):
        return None
    return names if len(names) <= MAX_ARCHIVE_MEMBERS else None


# -- decisions ----------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    reason: str
    """For a denial this is what the model reads: what was refused and what would allow it."""
    rule: str | None = None
    """The config rule that decided, if one did."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the rules say about a call before anyone is asked."""

    outcome: Literal["allow", "ask", "deny"]
    reason: str
    rule: str | None = None
    user_only: bool = False
    """For "ask": only the user may approve, not `--yes` or `--allow` (a command that cannot be checked
    against the deny rules that apply to its tool)."""


def _summary(tool_name: str, input: Mapping[str, Any]) -> str:
    if tool_name == "bash" and isinstance(input.get("command"), str):
        return f"bash: {input['command']}"
    if tool_name in PATH_TOOLS and isinstance(input.get("path"), str):
        return f"{tool_name}: {input['path']}"
    text = json.dumps(dict(input), ensure_ascii=False, default=str)
    return f"{tool_name}: {text if len(text) <= 200 else text[:197] + '...'}"


AskUser = Approver
"""The `ask` callback: the surface's approver (nova.tools.approval)."""


class PermissionPolicy:
    """The permission rules of one session. Immutable: built once from config and flags."""

    __slots__ = ("_allow", "_allowed_tools", "_ask", "_ask_user", "_cwd", "_deny", "_dynamic_deny", "_interactive",
                 "_limit", "_private_tmp", "_protected", "_read_roots", "_unconfined", "_workspace", "_yes")

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
    _limit: Callable[[str, Mapping[str, Any], Path], str | None] | None
    _workspace: Path | None
    _unconfined: str | None
    _private_tmp: bool

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
        limit: Callable[[str, Mapping[str, Any], Path], str | None] | None = None,
        workspace: Path | None = None,
        unconfined: str | None = None,
        private_tmp: bool = False,
    ) -> None:
        """`cwd` is the directory path rules are relative to (default: the process's, at construction);
        `run_tool_checked` uses the tool context's instead. Bad rules raise `ConfigError`.
        `dynamic_deny` returns extra deny rules read at every check: the ones canonical task state derives
        from the user's constraints ("merge not approved" → `bash(git merge*)`, nova.context.state). They
        take effect on the next call, without waiting for the model to read anything; the model cannot
        change them (task state is written only by deterministic code). `protected` are the paths no
        tool that writes may touch, whatever else is allowed. `read_roots` are folders besides the working
        directory that reading tools may read without asking (the project root, the session's folder).
        `limit(tool, input, cwd)` returns why a call is beyond what the skills in use declared (nova.skills),
        or None: it is asked before any rule, so nothing allows what an active skill may not do.
        `workspace` is the folder bash may write in without asking (default: `cwd`): a line that writes
        outside it, or where only the running command knows, needs approval whatever the allow rules say
        (`private_tmp`: `/tmp` is the sandbox's own, so writing there is not outside). `unconfined` says
        why no sandbox can run here: then every bash command that is not read-only needs approval,
        whatever the allow rules say."""
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
            "_limit": limit,
            "_workspace": workspace,
            "_unconfined": unconfined,
            "_private_tmp": private_tmp,
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

    def check(self, tool: Tool, input: Mapping[str, Any], *, cwd: Path | None = None, call_id: str = "") -> Decision:
        """`call_id` is the model's id of the call, passed on to the approver when the user is asked."""
        verdict = self.evaluate(tool, input, cwd=cwd)
        if verdict.outcome == "ask":
            return self._needs_approval(tool.name, input, verdict, call_id=call_id, cwd=cwd or self._cwd)
        return Decision(verdict.outcome == "allow", verdict.reason, verdict.rule)

    def evaluate(self, tool: Tool, input: Mapping[str, Any], *, cwd: Path | None = None) -> Verdict:
        """What the rules decide before anyone is asked (no prompt, no flags): `check` acts on it, and
        `nova permissions check` prints it."""
        name = tool.name
        where = cwd or self._cwd
        summary = _summary(name, input)
        command = input.get("command") if name == "bash" else None
        line = parse_command_line(command) if isinstance(command, str) and command.strip() else None
        if not tool.read_only:
            why = self._protected_reason(name, input, line, where)
            if why is not None:
                return Verdict("deny", f"{summary!r} is refused: {why}, and no tool may change it "
                               "(edit it yourself outside Nova if it must change).", "protected")
        elif name in PATH_TOOLS and isinstance(input.get("path"), str):
            why = self._protected.read_reason(input["path"], where)
            if why is not None:
                return Verdict("deny", f"{summary!r} is refused: {why}.", "protected")
        if self._limit is not None:
            beyond = self._limit(name, input, where)
            if beyond is not None:
                return Verdict("deny", f"{summary!r} is refused: {beyond}.", "skill")
        units = _bash_units(line, command) if line is not None and command else _units_for(name, input, where)

        denied = self._match_any(self._deny, name, units)
        if denied is not None:
            return Verdict("deny", f"{summary!r} is refused by the deny rule `{denied}`.", denied.text)
        task_rules = (tuple(parse_rule(r, where="task state") for r in self._dynamic_deny())
                      if self._dynamic_deny is not None else ())
        denied = self._match_any(task_rules, name, units)
        if denied is not None:
            return Verdict("deny", f"{summary!r} is refused by the task-state rule `{denied}`: "
                                   "the user has not approved this action (ask them; /approve records it).",
                           denied.text)

        if line is not None and line.unresolved:
            # No rule may allow what cannot be seen; with deny rules on bash, only the user may, since
            # the command might be one of the denied ones.
            guarded = any(fnmatch.fnmatchcase(name, r.tool) for r in (*self._deny, *task_rules))
            return Verdict("ask", f"it cannot be checked before it runs ({'; '.join(line.unresolved)})",
                           user_only=guarded)

        if line is not None:
            concern = self._write_concern(line, where)
            if concern is not None:
                return Verdict("ask", concern)

        allowed = self._match_all(name, units)
        if allowed is not None:
            if self._unconfined is not None and line is not None and not line.read_only:
                return Verdict("ask", f"no sandbox can run here ({self._unconfined}), so a command that is not "
                                      "read-only needs approval whatever the allow rules say", allowed)
            return Verdict("allow", f"allowed by the rule `{allowed}`", allowed)

        ask_rule = self._match_any(self._ask, name, units)
        if ask_rule is None and tool.read_only:
            raw = input.get("path", PATH_TOOLS.get(name))
            concern = read_concern(name, raw, cwd=where, roots=self._read_roots) if isinstance(raw, str) else None
            if concern is None:
                return Verdict("allow", "read-only tool")
            return Verdict("ask", concern)
        if ask_rule is not None:
            return Verdict("ask", f"the ask rule `{ask_rule}` matches", ask_rule.text)
        return Verdict("ask", f"{name} can change files or run commands")

    def _protected_reason(self, name: str, input: Mapping[str, Any], line: ShellLine | None,
                          where: Path) -> str | None:
        if name in PATH_TOOLS:
            raw = input.get("path")
            return self._protected.reason(raw, where) if isinstance(raw, str) and raw.strip() else None
        if line is None:
            return None
        bases = _bases(line, where)
        for command in line.commands:
            control = control_command(command.text.split())
            if control is not None:
                return (f"it runs `{control}`: Nova's own controls (config and rules, memory review, trust, "
                        "grants, the server's token) answer only to a person, never to a command the model runs")
        # A `cd` earlier in the line may have moved the shell: relative targets are checked from there too.
        for write in _known_writes(line):
            for base in bases:
                if write.archive is not None:
                    why = self._archive_reason(write, base)
                else:
                    why = self._protected.reason(write.path, base)
                if why is not None:
                    return f"it writes {write.path} ({write.via}): {why}"
        for command in line.commands:
            # Only a word with a folder in it can lead out of the working directory into Nova's home.
            for word in (w for w in command.exact.split() if "/" in w or w.startswith(("~", "$"))):
                if any(self._protected.names_home(word, base) for base in bases):
                    return f"it names {word}, in Nova's home (its config, memory, sessions and server token)"
        return None

    def _archive_reason(self, write: ShellWrite, base: Path) -> str | None:
        archive = write.archive
        assert archive is not None
        members = _archive_members(base / Path(archive.archive).expanduser(), archive.kind)
        if members is None:
            return None  # unreadable here: the write is a place the parser cannot know (`_write_concern`)
        for member in members:
            why = self._protected.reason(os.path.join(write.path, member), base)
            if why is not None:
                return f"the archive holds {member}: {why}"
        return None

    def _write_concern(self, line: ShellLine, where: Path) -> str | None:
        """Why a line's writes need approval whatever the allow rules say: one lands outside the
        workspace (`echo x > ~/.bashrc`, `>> ~/.ssh/authorized_keys`), or where only the running command
        knows (`> $f`, `git apply`, an archive that cannot be read here). None when every write is in
        the workspace (or thrown away)."""
        if not line.writes:
            return None
        workspace = Path(os.path.realpath(self._workspace or where))
        bases = _bases(line, where)
        moved = any(not _static_dir(d) for d in line.dirs)
        for write in _known_writes(line, keep_unknown=True):
            if write.dynamic:
                return f"it writes to a place known only when it runs ({write.path}: {write.via})"
            target = write.path
            if target in NULL_SINKS or target.startswith("/dev/fd/"):
                continue
            if moved and not os.path.isabs(os.path.expanduser(target)):
                return f"it writes {target} ({write.via}) after moving to a folder known only when it runs"
            if write.archive is not None:
                members = _archive_members(where / Path(write.archive.archive).expanduser(), write.archive.kind)
                if members is None:
                    return (f"it unpacks {write.archive.archive}, whose files cannot be listed before it runs "
                            f"({write.via})")
                targets = [os.path.join(target, m) for m in members]
            else:
                targets = [target]
            for path in targets:
                for base in bases:
                    real = Path(os.path.realpath(base / Path(_HOME_VAR_RE.sub("~", path)).expanduser()))
                    if _inside(real, workspace) or (self._private_tmp and _inside(real, Path("/tmp"))):
                        continue
                    return f"it writes {path} outside the workspace {workspace} ({write.via})"
        return None

    def explain_command(self, command: ShellCommand) -> str:
        """What the rules make of one command of a bash line, for `nova permissions check`."""
        units = [_Unit(strict=() if command.unresolved else (command.exact,), loose=command.forms,
                       open_prefixes=command.open_prefixes)]
        task_rules = (tuple(parse_rule(r, where="task state") for r in self._dynamic_deny())
                      if self._dynamic_deny is not None else ())
        denied = self._match_any((*self._deny, *task_rules), "bash", units)
        if denied is not None:
            return f"denied by `{denied}`"
        if command.unresolved:
            return f"cannot be checked before it runs: {command.unresolved}"
        allowed = next((r for r in self._allow if _rule_matches(r, "bash", (command.exact,))), None)
        if allowed is not None:
            return f"allowed by `{allowed}`"
        asked = self._match_any(self._ask, "bash", units)
        return f"ask rule `{asked}` matches" if asked is not None else "no rule allows it"

    def file_screen(self, tool_name: str, *, cwd: Path | None = None) -> FileScreen:
        """How a directory search by `tool_name` screens each file it meets: these path rules, this
        workspace (nova.tools.policy.read_policy). Rules are matched per file only when there are path rules."""
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
        found = next((r for r in rules if _rule_matches(r, name, forms)), None)
        if found is None:
            prefixes = [p for u in units for p in u.open_prefixes]
            found = next((r for r in rules if r.pattern is not None and fnmatch.fnmatchcase(name, r.tool)
                          and any(could_match_longer(r.pattern, p) for p in prefixes)), None)
        return found

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

    def _needs_approval(self, name: str, input: Mapping[str, Any], verdict: Verdict, *, call_id: str = "",
                        cwd: Path) -> Decision:
        rule_text = verdict.rule
        why = verdict.reason
        if verdict.user_only:
            if not self._interactive:
                return Decision(False, f"{_summary(name, input)!r} needs the user's approval: {why}, and deny rules "
                                       f"apply to {name}. --yes and --allow do not cover it and this run is not "
                                       "interactive; write the command out plainly so it can be checked.", rule_text)
        elif self._yes:
            return Decision(True, "allowed by --yes", rule_text)
        elif name in self._allowed_tools:
            return Decision(True, f"allowed by --allow {name}", rule_text)
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
            rule=rule_text, call_id=call_id, user_only=verdict.user_only, diff=change_diff(name, input, cwd),
        )
        try:
            given = self._ask_user(request)
            answer = answer_of(given)
        except Exception:
            # A broken prompt must fail closed: no answer is not a yes.
            log.exception("the permission prompt failed; treating it as a refusal")
            given, answer = None, Answer.DENY
        if answer is Answer.SESSION:
            return Decision(True, "approved by the user for this session", rule_text)
        if answer is Answer.ONCE:
            return Decision(True, "approved by the user", rule_text)
        if isinstance(given, NoAnswer):
            return Decision(False, f"nobody answered the approval of {_summary(name, input)!r}: {given.reason}. "
                                   "Ask the user or try another way.", rule_text)
        return Decision(False, f"the user declined {_summary(name, input)!r}. Ask them or try another way.",
                        rule_text)


def run_tool_checked(
    policy: PermissionPolicy, tool: Tool, input: Mapping[str, Any], ctx: ToolContext
) -> ToolOutput:
    """Check, then run: a denied call returns an error result and the tool is never started. Path rules
    are taken relative to `ctx.cwd`, where the tool will run."""
    try:
        tool, input = resolve_delegate(tool, input)
    except ToolError as exc:
        return ToolOutput(content=f"Error: {exc}", is_error=True)
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

