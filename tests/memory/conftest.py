from __future__ import annotations

from pathlib import Path

import pytest

from nova.memory.store import MemoryStore


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    return root


@pytest.fixture
def store(nova_home: Path, project: Path) -> MemoryStore:
    return MemoryStore.for_workspace(home=nova_home, cwd=project / "src")
