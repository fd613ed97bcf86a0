"""`glob` and `grep` never list Nova's own lock and state files (`.nova/memory/.memory.lock` …), made
here by the real memory store; the memories themselves and a project's own lock files stay visible."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nova.memory.store import Memory, MemoryStore
from nova.tools import ToolContext, ToolOutput, default_registry


def run(name: str, ctx: ToolContext, **input: Any) -> ToolOutput:
    tool = default_registry().get(name)
    assert tool is not None
    return tool.run(input, ctx)


@pytest.fixture
def project(tmp_path: Path, nova_home: Path) -> Path:
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    (root / "app.py").write_text("print('needle')\n")
    (root / "poetry.lock").write_text("needle = 1\n")  # the project's own lock file: not Nova's
    store = MemoryStore.for_workspace(home=nova_home, cwd=root)
    store.write(Memory(name="build", description="how to build (needle)", type="project",
                       body="Run make; the needle is in the Makefile."))
    memory_dir = root / ".nova" / "memory"
    assert (memory_dir / ".memory.lock").exists()  # what the store leaves behind, as in the demo
    (memory_dir / ".nova-scan").mkdir(exist_ok=True)
    (memory_dir / ".nova-scan" / "recency").write_text("needle\n")
    (memory_dir / ".build.md.x1.tmp").write_text("needle\n")  # an atomic write caught half way
    return root


def test_glob_lists_no_internal_file(project: Path) -> None:
    out = run("glob", ToolContext(cwd=project, timeout_s=20), pattern="**/*")
    listed = set(out.content.splitlines())
    assert {"app.py", "poetry.lock", ".nova/memory/build.md", ".nova/memory/MEMORY.md"} <= listed
    assert not [line for line in listed if ".lock" in line and line != "poetry.lock"], listed
    assert not [line for line in listed if "/." in line], listed


def test_glob_inside_the_memory_folder_hides_them_too(project: Path) -> None:
    out = run("glob", ToolContext(cwd=project, timeout_s=20), pattern="*", path=".nova/memory")
    assert set(out.content.splitlines()) == {".nova/memory/build.md", ".nova/memory/MEMORY.md"}


def test_grep_searches_no_internal_file(project: Path) -> None:
    out = run("grep", ToolContext(cwd=project, timeout_s=20), pattern="needle")
    files = {line.split(":", 1)[0] for line in out.content.splitlines() if ":" in line}
    assert files == {"app.py", "poetry.lock", ".nova/memory/build.md", ".nova/memory/MEMORY.md"}


def test_read_file_still_reads_one_named_explicitly(project: Path) -> None:
    out = run("read_file", ToolContext(cwd=project, timeout_s=20), path=".nova/memory/.nova-scan/recency")
    assert not out.is_error and "needle" in out.content
