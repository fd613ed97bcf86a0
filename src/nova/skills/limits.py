"""What an active skill may not do: its declared permissions are the most it may use.

The permission policy asks `refusal` before anything else allows a call (nova.tools.permissions): a call
outside every active skill's declared tools, files or network is refused with the reason, whatever the
rules or the user's flags would have allowed. A skill that declares nothing of a kind limits nothing of
that kind (an ecosystem skill with no Nova fields runs under the ordinary policy). Only what can be seen
before a call runs is judged: for `bash`, the commands and the redirection targets the parser finds; a
line it cannot see through is refused when the skill declared no network.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from nova.skills.manifest import Skill
from nova.tools.policy.shell_parse import parse_command_line

__all__ = ["ALWAYS_ALLOWED", "is_network_command", "refusal"]

ALWAYS_ALLOWED = frozenset({"skill", "propose_task_update"})
"""Loading another skill and proposing task notes change nothing in the workspace."""

_PATH_TOOLS = {"read_file": ("read", None), "grep": ("read", "."), "glob": ("read", "."),
               "write_file": ("write", None), "edit_file": ("write", None)}
_NETWORK = frozenset({"curl", "wget", "ssh", "scp", "sftp", "ftp", "rsync", "nc", "ncat", "netcat", "telnet",
                      "http", "https", "aria2c", "socat"})
_NETWORK_SUB = {"git": {"clone", "fetch", "pull", "push", "ls-remote", "submodule"},
                "pip": {"install", "download"}, "pip3": {"install", "download"}, "uv": {"pip", "add", "sync"},
                "npm": {"install", "i", "add", "publish", "ci"}, "pnpm": {"install", "add"},
                "yarn": {"install", "add"}, "apt": {"install", "update"}, "apt-get": {"install", "update"},
                "docker": {"pull", "push", "login"}, "cargo": {"install", "fetch", "publish"},
                "go": {"get", "install"}, "gh": set()}


def is_network_command(text: str) -> bool:
    words = text.split()
    if not words:
        return False
    head = words[0]
    if head in _NETWORK:
        return True
    subs = _NETWORK_SUB.get(head)
    if subs is None:
        return False
    return not subs or any(w in subs for w in words[1:3])


def refusal(skills: Iterable[Skill], tool: str, input: Mapping[str, Any], *, cwd: Path, root: Path) -> str | None:
    """Why the active `skills` refuse this call, or None. Every active skill's limits apply."""
    if tool in ALWAYS_ALLOWED:
        return None
    for skill in skills:
        why = _refusal(skill, tool, input, cwd=cwd, root=root)
        if why is not None:
            return f"the active skill {skill.label} {why}"
    return None


def _refusal(skill: Skill, tool: str, input: Mapping[str, Any], *, cwd: Path, root: Path) -> str | None:
    p = skill.permissions
    if p.tools is not None and tool not in p.tools:
        return f"may use only {', '.join(sorted(p.tools)) or 'no tools'}; {tool} is not among them"
    if tool in _PATH_TOOLS:
        kind, default = _PATH_TOOLS[tool]
        globs = p.write if kind == "write" else p.read
        raw = input.get("path", default)
        if globs is not None and isinstance(raw, str) and not _allowed_path(raw, globs, cwd=cwd, root=root):
            return f"may {kind} only {', '.join(globs) or 'no files'}; {raw} is outside"
    command = input.get("command") if tool == "bash" else None
    if isinstance(command, str) and (p.network is False or p.write is not None):
        line = parse_command_line(command)
        if p.network is False:
            if line.unresolved:
                return f"declares no network, and this command cannot be checked before it runs ({line.unresolved[0]})"
            reaching = next((c.text for c in line.commands if is_network_command(c.text)), None)
            if reaching is not None:
                return f"declares no network; `{reaching}` reaches the network"
        if p.write is not None:
            for write in line.writes:
                if not _allowed_path(write.path, p.write, cwd=cwd, root=root):
                    return f"may write only {', '.join(p.write) or 'no files'}; {write.path} ({write.via}) is outside"
    return None


def _allowed_path(raw: str, globs: Iterable[str], *, cwd: Path, root: Path) -> bool:
    """`raw` (relative to `cwd`) matches a glob written relative to the project root."""
    target = Path(raw).expanduser()
    absolute = Path(_normal(target if target.is_absolute() else cwd / target))
    try:
        relative = absolute.relative_to(_normal(root)).as_posix() or "."
    except ValueError:
        return False  # outside the project: no project-relative glob reaches it
    return any(fnmatch.fnmatchcase(relative, g.rstrip("/")) or fnmatch.fnmatchcase(relative, g.rstrip("/") + "/*")
               or relative == g.rstrip("/").removesuffix("/**") for g in globs)


def _normal(path: Path) -> str:
    import os

    return os.path.normpath(str(path))
