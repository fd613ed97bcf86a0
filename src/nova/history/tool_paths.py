"""Which files a tool call reads and which it changes, whatever agent made it: one declared map of tools.

    touched = paths_of(call)              # ToolPaths(reads=(...), writes=(...))
    touched = paths_of(call, writers={"my_mcp_write": ("target",)})   # tools that declare themselves

Tool names match case-insensitively (Claude Code's `Edit` is `edit`). Covered: Nova's own tools; Claude
Code's Edit, MultiEdit, Write, Read, NotebookEdit; OpenCode and pi write/edit/read; Cline's
write_to_file / replace_in_file / read_file; SWE-agent's and Anthropic's `str_replace_editor` (view reads,
the other commands write); Codex and OpenCode `apply_patch` (its `*** Update/Add/Delete File:` headers);
and shell commands, where `sed -i`, `tee`, `>` / `>>`, `mv`, `cp`, `rm` and `touch` write and `cat`,
`head`, `tail`, `less` read, and a script inside the command (a heredoc, `python -c`) writes what it
opens for writing or patches (`script_writes`). A string is listed only if it looks like a path: one token, no
`://`, and a file extension or a leading `/`, `./`, `../` or `~/` — so prose such as `open/closed` or
`tool_call/2` never counts as a file.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass

from nova.messages import ToolUsePart

__all__ = ["READERS", "SHELL_TOOLS", "WRITERS", "ToolPaths", "looks_like_path", "paths_in", "paths_of", "script_writes",
           "shell_paths"]

_FILE_KEYS = ("file_path", "filePath", "path", "notebook_path", "target_file", "filename")
# lower-case tool name -> the argument keys that may name the file
WRITERS: Mapping[str, tuple[str, ...]] = {
    name: _FILE_KEYS for name in ("write_file", "edit_file", "create_file", "edit", "multiedit", "write",
                                  "notebookedit", "write_to_file", "replace_in_file", "insert_content",
                                  "search_and_replace")
}
READERS: Mapping[str, tuple[str, ...]] = {
    name: _FILE_KEYS for name in ("read", "read_file", "view", "open_file", "cat", "view_file")
}
EDITOR_TOOLS = ("str_replace_editor", "str_replace_based_edit_tool")
PATCH_TOOLS = ("apply_patch", "patch")
SHELL_TOOLS = ("bash", "shell", "execute_bash", "exec_command", "execute_command", "run_command", "local_shell",
               "run_shell_command", "terminal")
_PATCH_HEADER = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+?)\s*$", re.M)
_EXTENSION = re.compile(r"\.[A-Za-z0-9_+-]{1,10}$")
_SHELL_SPLIT = re.compile(r"&&|\|\||;|\||\n")
_READ_COMMANDS = ("cat", "head", "tail", "less", "more", "nl", "wc")
# A path-shaped token inside free text (a tool's output, a summary): a name with an extension, or with a
# slash in it; `looks_like_path` then turns prose down.
_PATH = re.compile(r"(?<![\w/.@:-])((?:~|\.{1,2})?/?(?:[\w.+-]+/)*[\w+-][\w.+-]*\.[A-Za-z][A-Za-z0-9]{0,7}|"
                   r"(?:~|\.{1,2})?/?(?:[\w.+-]+/)+[\w.+-]+)(?![\w/(])")


@dataclass(frozen=True, slots=True)
class ToolPaths:
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()


def looks_like_path(token: str) -> bool:
    if not token or any(c.isspace() for c in token) or "://" in token or token.startswith("-"):
        return False
    if token.startswith(("/dev/", "/proc/")) or token in (".", "..", "/", "~"):
        return False
    last = token.rstrip("/").rsplit("/", 1)[-1]
    if _EXTENSION.search(last) and not re.fullmatch(r"[\d.]+", last):
        return True
    return token.startswith(("/", "./", "../", "~/")) and len(token) > 2


def paths_of(call: ToolUsePart, *, writers: Mapping[str, tuple[str, ...]] | None = None) -> ToolPaths:
    """The files `call` reads and writes. `writers` adds tools (an MCP server's) that declare which
    argument names the file they write."""
    name = call.name.lower()
    args = call.input
    declared = {k.lower(): v for k, v in (writers or {}).items()}
    if name in declared or name in WRITERS:
        return ToolPaths(writes=_first_path(args, declared.get(name) or WRITERS[name]))
    if name in READERS:
        return ToolPaths(reads=_first_path(args, READERS[name]))
    if name in EDITOR_TOOLS:
        found = _first_path(args, ("path",))
        return ToolPaths(reads=found) if args.get("command") == "view" else ToolPaths(writes=found)
    if name in PATCH_TOOLS:
        body = next((str(args[k]) for k in ("input", "patch", "patchText", "patch_text") if k in args), "")
        return ToolPaths(writes=tuple(dict.fromkeys(p for p in _PATCH_HEADER.findall(body) if looks_like_path(p))))
    if name in SHELL_TOOLS:
        command = args.get("command") or args.get("cmd") or ""
        if isinstance(command, list):
            command = " ".join(str(c) for c in command)
        return shell_paths(str(command))
    return ToolPaths()


def _first_path(args: Mapping[str, object], keys: tuple[str, ...]) -> tuple[str, ...]:
    for key in keys:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return (value.strip(),)
    return ()


def shell_paths(command: str) -> ToolPaths:
    reads: list[str] = []
    writes: list[str] = []
    for segment in _SHELL_SPLIT.split(command):
        for target in re.findall(r"(?<![0-9&<])>>?\s*([^\s|;&<>]+)", segment):
            if looks_like_path(target):
                writes.append(target)
        try:
            words = shlex.split(re.sub(r"\d?>>?\s*[^\s|;&<>]+", " ", segment), comments=False)
        except ValueError:
            words = segment.split()
        if not words:
            continue
        head, rest = words[0].rsplit("/", 1)[-1], [w for w in words[1:] if looks_like_path(w)]
        if _edits_in_place(head, words[1:]) or head in ("tee", "touch", "rm"):
            writes.extend(rest)
        elif head in ("mv", "cp") and rest:
            writes.extend(rest if head == "mv" else rest[-1:])
            if head == "cp":
                reads.extend(rest[:-1])
        elif head in _READ_COMMANDS:
            reads.extend(rest)
    writes.extend(script_writes(command))
    return ToolPaths(reads=tuple(dict.fromkeys(reads)), writes=tuple(dict.fromkeys(writes)))


# A script inside the command (a heredoc, `python -c`) that writes a file: `open(path, "w")`, a variable
# bound to a path literal and then opened for writing, `Path(path).write_text(...)`, and the `+++ b/` headers
# of a diff given to `git apply` or `patch`. Agents rewrite files this way when `sed` is too awkward.
_OPEN_WRITE = re.compile(r"""open\(\s*(?:(['"])([^'"\n]+)\1|(\w+))\s*,\s*(?:mode\s*=\s*)?['"][wax]b?\+?['"]""")
_ASSIGNED = re.compile(r"""\b(\w+)\s*=\s*(['"])([^'"\n]+)\2""")
_PATH_WRITE = re.compile(r"""Path\(\s*(['"])([^'"\n]+)\1\s*\)\s*\.write_(?:text|bytes)\(""")
_DIFF_TARGET = re.compile(r"^\+\+\+ (?:b/)?(\S+)", re.M)


def script_writes(command: str) -> list[str]:
    """Files an embedded script writes (see `_OPEN_WRITE` and its neighbours), in order."""
    if "open(" not in command and "write_" not in command and "+++ " not in command:
        return []
    bound = {name: value for name, _, value in _ASSIGNED.findall(command)}
    found: list[str] = []
    for _, literal, variable in _OPEN_WRITE.findall(command):
        found.append(literal or bound.get(variable, ""))
    found += [path for _, path in _PATH_WRITE.findall(command)]
    if re.search(r"\b(?:git apply|patch)\b", command):
        found += _DIFF_TARGET.findall(command)
    return [p for p in dict.fromkeys(found) if p and looks_like_path(p) and p != "/dev/null"]


def _edits_in_place(head: str, flags: list[str]) -> bool:
    """`sed -i` / `sed --in-place` / `perl -pi`: the command rewrites the files it names."""
    if head == "sed":
        return any((f.startswith("-") and not f.startswith("--") and "i" in f[1:]) or f.startswith("--in-place")
                   for f in flags)
    return head == "perl" and any(f.startswith("-") and "i" in f for f in flags)


def paths_in(text: str) -> list[str]:
    """The paths `text` names, each once, in the order they first appear."""
    seen: dict[str, None] = {}
    for match in _PATH.finditer(text):
        token = match.group(1).rstrip(".,:;")
        if looks_like_path(token):
            seen.setdefault(token, None)
    return list(seen)
