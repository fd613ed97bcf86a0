"""Finding a project's Claude Code sessions under `~/.claude/projects/` (or `$CLAUDE_CONFIG_DIR/projects`).

Claude Code keeps each project's sessions in a directory named after the project path with every
character other than a letter or digit replaced by `-` (`/home/me/app` -> `-home-me-app`). Older
versions replaced only `/` and `.`, which gives the same name for ordinary paths; when no directory has
the expected name, the session files' own `cwd` field decides. Sub-agent files (`agent-*.jsonl`, beside
the sessions or under `<session>/subagents/`) come after the sessions they belong to.

A folder named on the command line that is not one session (a copy of such a project directory, a
folder of Codex rollouts) is read the same way: every `.jsonl`, `.json` and `.traj` file under it, each
Aider history (`.aider.chat.history.md`) and every folder that is one session, the sub-agent files last
(`folder_sessions`)."""

from __future__ import annotations

import re
from pathlib import Path

from nova.errors import FileRefused
from nova.fs.safe_read import LongLine, bounded_lines, loads
from nova.fs.special_files import open_regular

__all__ = ["claude_code_project_dir", "claude_code_sessions", "folder_sessions"]

_HEAD_LINE_BYTES = 4 * 1024 * 1024
"""A record that names the working directory comes first and is short; longer lines are not it."""

_NOT_ALNUM = re.compile(r"[^A-Za-z0-9]")


def claude_code_project_dir(projects: Path, project: Path) -> Path | None:
    expected = projects / _NOT_ALNUM.sub("-", str(project))
    if expected.is_dir():
        return expected
    if not projects.is_dir():
        return None
    for candidate in sorted(p for p in projects.iterdir() if p.is_dir()):
        for session in sorted(candidate.glob("*.jsonl"))[:3]:
            if _cwd_of(session) == str(project):
                return candidate
    return None


def claude_code_sessions(config_dir: Path, project: Path) -> list[Path]:
    """The project's session files, oldest first, then its sub-agent files; [] when there are none."""
    directory = claude_code_project_dir(config_dir / "projects", project)
    if directory is None:
        return []
    files = [p for p in directory.rglob("*.jsonl") if p.is_file()]
    main = sorted((p for p in files if not p.name.startswith("agent-")), key=lambda p: (p.stat().st_mtime, p.name))
    agents = sorted((p for p in files if p.name.startswith("agent-")), key=lambda p: (p.stat().st_mtime, p.name))
    return main + agents


_SESSION_SUFFIXES = (".jsonl", ".json", ".traj")
"""The files a folder walk tries (`.traj`: SWE-agent's trajectories); Aider's history by its name."""
_AIDER_HISTORY = ".aider.chat.history.md"

_ONE_SESSION_FOLDER = ("transcript.jsonl", "api_conversation_history.json")
"""A folder holding one of these is one session (Nova's, a Cline / Roo Code task), its other files not."""


def folder_sessions(folder: Path) -> list[Path]:
    """The sessions under `folder`, by path: each `.jsonl`, `.json` and `.traj` file and Aider history, and
    each folder that is one session as a whole (Nova's `meta.json`, Cline's `ui_messages.json` are not sessions of their own);
    the sub-agent files (`agent-*`) last, so importing a parent first takes its sub-agent as a child."""
    found: list[Path] = []
    pending = [folder]
    while pending:
        here = pending.pop()
        try:
            entries = sorted(here.iterdir())
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir() and not entry.is_symlink():
                if any((entry / name).is_file() for name in _ONE_SESSION_FOLDER):
                    found.append(entry)
                else:
                    pending.append(entry)
            elif (entry.suffix in _SESSION_SUFFIXES or entry.name == _AIDER_HISTORY) and entry.is_file():
                found.append(entry)
    found.sort()
    return [p for p in found if not p.name.startswith("agent-")] + [p for p in found if p.name.startswith("agent-")]


def _cwd_of(path: Path) -> str | None:
    """The `cwd` of the first records of a session file (a regular file only, each line bounded)."""
    try:
        with open_regular(path, str(path)) as handle:
            for _, item in zip(range(50), bounded_lines(handle, limit=_HEAD_LINE_BYTES), strict=False):
                if isinstance(item, LongLine):
                    continue
                try:
                    record = loads(item[1].decode("utf-8", errors="replace"))
                except ValueError:
                    continue
                if isinstance(record, dict) and isinstance(record.get("cwd"), str):
                    return str(record["cwd"])
    except (OSError, FileRefused):
        return None
    return None
