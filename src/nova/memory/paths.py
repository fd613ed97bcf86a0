"""Where instruction files and memories live: the git root of a working directory, the memory dirs."""

from __future__ import annotations

from pathlib import Path

__all__ = ["find_git_root", "home_memory_dir", "project_memory_dir", "project_root"]


def find_git_root(start: Path) -> Path | None:
    """The nearest ancestor of `start` (itself included) holding `.git` (a directory, or a file for
    worktrees and submodules). Found by walking up rather than running git: no subprocess per turn."""
    current = start.resolve()
    for candidate in (current, *current.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def project_root(cwd: Path) -> Path:
    """The git root, or the working directory itself outside a repository."""
    return find_git_root(cwd) or cwd.resolve()


def home_memory_dir(home: Path) -> Path:
    return home / "memory"


def project_memory_dir(cwd: Path) -> Path:
    return project_root(cwd) / ".nova" / "memory"
