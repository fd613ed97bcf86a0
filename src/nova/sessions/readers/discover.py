"""Finding a project's Claude Code sessions under `~/.claude/projects/` (or `$CLAUDE_CONFIG_DIR/projects`).

Claude Code keeps each project's sessions in a directory named after the project path with every
character other than a letter or digit replaced by `-` (`/home/me/app` -> `-home-me-app`). Older
versions replaced only `/` and `.`, which gives the same name for ordinary paths; when no directory has
the expected name, the session files' own `cwd` field decides. Sub-agent files (`agent-*.jsonl`, beside
the sessions or under `<session>/subagents/`) come after the sessions they belong to."""

from __future__ import annotations

import json
import re
from pathlib import Path

__all__ = ["claude_code_project_dir", "claude_code_sessions"]

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


def _cwd_of(path: Path) -> str | None:
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            for _, line in zip(range(50), handle, strict=False):
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                if isinstance(record, dict) and isinstance(record.get("cwd"), str):
                    return str(record["cwd"])
    except OSError:
        return None
    return None
