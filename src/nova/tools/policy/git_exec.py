"""What in a repository git runs as a program: the config keys whose value is a command, and hooks.

A command the model runs must not leave behind something git will run later, outside the sandbox, when
the user types `git status` or `git commit`: a hook in `.git/hooks`, or `core.fsmonitor = <command>` in
`.git/config`. The same keys given on git's command line (`git -c core.fsmonitor=… status`) or through
the environment (`GIT_CONFIG_COUNT`, `GIT_CONFIG_KEY_0`…) run a program the shell parser cannot see.
The sandbox (undoing what a command planted) and the shell parser (treating such a command as one it
cannot check) both ask here.
"""

from __future__ import annotations

import re

__all__ = ["GIT_PROGRAM_ENV", "config_key_runs_program", "config_text_runs_program", "env_runs_program"]

# Per section: the keys whose value git runs (or that make git read another file of config); "*" is
# every key of the section.
_PROGRAM_KEYS: dict[str, frozenset[str]] = {
    "core": frozenset({"fsmonitor", "hookspath", "sshcommand", "pager", "editor", "askpass", "gitproxy",
                       "worktree"}),
    "diff": frozenset({"external", "textconv", "command"}),
    "merge": frozenset({"driver"}),
    "filter": frozenset({"*"}),
    "credential": frozenset({"helper"}),
    "gpg": frozenset({"program"}),
    "sequence": frozenset({"editor"}),
    "pager": frozenset({"*"}),
    "alias": frozenset({"*"}),
    "include": frozenset({"*"}),
    "includeif": frozenset({"*"}),
    "remote": frozenset({"uploadpack", "receivepack", "proxy"}),
    "uploadpack": frozenset({"packobjectshook"}),
    "difftool": frozenset({"cmd"}),
    "mergetool": frozenset({"cmd"}),
    "man": frozenset({"cmd", "path"}),
    "web": frozenset({"browser"}),
    "browser": frozenset({"cmd", "path"}),
    "http": frozenset({"proxy"}),
}

GIT_PROGRAM_ENV = frozenset({
    "GIT_CONFIG", "GIT_CONFIG_COUNT", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM",
    "GIT_SSH", "GIT_SSH_COMMAND", "GIT_EXEC_PATH", "GIT_ASKPASS", "SSH_ASKPASS", "GIT_EDITOR",
    "GIT_SEQUENCE_EDITOR", "GIT_PAGER", "GIT_EXTERNAL_DIFF", "GIT_PROXY_COMMAND", "GIT_TEMPLATE_DIR",
    "GIT_DIR", "GIT_WORK_TREE", "GIT_CEILING_DIRECTORIES",
})
"""Environment variables that make git run a program, or read config or hooks from elsewhere."""
_GIT_ENV_RE = re.compile(r"^GIT_CONFIG_(?:KEY|VALUE)_\d+$")


def config_key_runs_program(key: str) -> bool:
    """Whether `section[.subsection].name` (as `git -c` takes it; case-insensitive) names a program."""
    parts = key.strip().split(".")
    if len(parts) < 2:
        return False
    section, name = parts[0].lower(), parts[-1].lower()
    keys = _PROGRAM_KEYS.get(section)
    return keys is not None and ("*" in keys or name in keys)


def env_runs_program(name: str) -> bool:
    return name in GIT_PROGRAM_ENV or bool(_GIT_ENV_RE.match(name))


_SECTION_RE = re.compile(r'^\s*\[\s*([A-Za-z0-9.-]+)(?:\s+"(?:[^"\\]|\\.)*")?\s*\]')
_KEY_RE = re.compile(r"^\s*([A-Za-z][A-Za-z0-9-]*)\s*(?:=|$)")


def config_text_runs_program(text: str) -> str | None:
    """The first key of a git config file that git would run as a program (`core.fsmonitor`), or None.
    Read loosely (a line git might accept that this misreads counts as such a key): the question is
    only whether the file may be left as it is."""
    section = ""
    for line in text.splitlines():
        stripped = line.split("#", 1)[0].split(";", 1)[0]
        header = _SECTION_RE.match(stripped)
        if header:
            section = header.group(1).split(".")[0].lower()
            stripped = stripped[header.end():]
        elif stripped.strip().startswith("["):
            return stripped.strip()  # a header this reader does not understand
        key = _KEY_RE.match(stripped)
        if key and section and config_key_runs_program(f"{section}.{key.group(1)}"):
            return f"{section}.{key.group(1).lower()}"
    return None
