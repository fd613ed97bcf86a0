"""A `nova run` that fails before the model answers keeps no session: `nova sessions list` shows no
one-message entry for it. Run as a user would, in a subprocess, against a loopback server that refuses
the key (401, which is not retried)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest


class _RefusesTheKey(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        body = json.dumps({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error",
                                     "code": "invalid_api_key"}}).encode()
        self.send_response(401)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def refusing_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _RefusesTheKey)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def _nova(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NOVA_", "ANTHROPIC_", "OPENAI_"))}
    env["NOVA_HOME"] = str(home)
    return subprocess.run([sys.executable, "-m", "nova.cli.main", *args], capture_output=True, text=True, env=env,
                          timeout=120)


def _listed(home: Path) -> list[dict[str, object]]:
    listed = _nova(home, "sessions", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    rows: list[dict[str, object]] = json.loads(listed.stdout)
    return rows


def test_a_run_the_model_never_answered_leaves_no_session(tmp_path: Path, refusing_server: str) -> None:
    home = tmp_path / "home"
    failed = _nova(home, "run", "--provider", "compatible", "--base-url", refusing_server, "--model", "m",
                   "fix the bug")
    assert failed.returncode != 0
    assert "no session was kept" in failed.stderr and "API key" in failed.stderr
    assert _listed(home) == []
    assert not (home / "sessions").exists() or list((home / "sessions").iterdir()) == []


def test_a_run_that_was_answered_is_kept(tmp_path: Path, refusing_server: str) -> None:
    home = tmp_path / "home"
    project = tmp_path / "project"
    project.mkdir()
    ok = _nova(home, "run", "--provider", "demo", "--cwd", str(project), "what is here?")
    assert ok.returncode == 0, ok.stderr
    [row] = _listed(home)
    assert row["title"] == "what is here?" and int(str(row["messages"])) > 1
    # A failed turn on a resumed session keeps it: it holds an earlier conversation.
    again = _nova(home, "resume", "last", "--provider", "compatible", "--base-url", refusing_server,
                  "--model", "m", "and now?")
    assert again.returncode != 0 and "no session was kept" not in again.stderr
    assert [r["id"] for r in _listed(home)] == [row["id"]]
