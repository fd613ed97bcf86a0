"""Schemathesis over the served OpenAPI document: no generated request makes the server fail (5xx)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import Server, new_session

# Slow tier: generated requests by the hundred against a real server (fuzzing).
pytestmark = pytest.mark.slow

pytest.importorskip("schemathesis", reason="schemathesis comes with the `dev` extra")


def test_no_generated_request_gets_a_server_error(server: Server, tmp_path: Path) -> None:
    with server.client() as client:
        new_session(client, "a session for the generated requests to find")
    command = [
        sys.executable, "-m", "schemathesis.cli", "run", f"{server.base}/openapi.json",
        "--header", f"Authorization: Bearer {server.token}",
        "--checks", "not_a_server_error",
        "--phases", "examples,coverage,fuzzing",
        "--max-examples", "15",
        "--seed", "8",
        "--request-timeout", "30",
        "--workers", "1",
        "--generation-deterministic",
    ]
    # Its example database and reports go in the test's own folder, not the repository.
    run = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-3000:]
    assert "operations" in run.stdout.lower() or "passed" in run.stdout.lower(), run.stdout[-3000:]
