"""Fixtures for the server tests: a real uvicorn on loopback over a fresh demo project."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the server tests need the `server` extra")

from nova.agent.demo import make_demo_project

from .helpers import Server, running_server


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_demo_project(tmp_path / "project")


@pytest.fixture
def server(nova_home: Path, project: Path) -> Iterator[Server]:
    with running_server(nova_home, project) as handle:
        yield handle
