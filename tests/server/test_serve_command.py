"""The real `nova serve` command in a subprocess: NOVA_HOME, --port, --provider demo, --print-token."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx2 as httpx
import pytest

from nova.server.token import TOKEN_FILE

from .helpers import free_socket, parse_sse, texts_by_part, wait_serving

# Slow tier: nova serve as a subprocess, waited for until it answers.
pytestmark = pytest.mark.slow


def nova_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NOVA_", "ANTHROPIC_", "OPENAI_"))}
    env["NOVA_HOME"] = str(home)
    return env


def test_print_token_prints_the_saved_token_and_exits(tmp_path: Path) -> None:
    home = tmp_path / "home"
    run = subprocess.run([sys.executable, "-m", "nova.cli.main", "serve", "--print-token"], env=nova_env(home),
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    token = run.stdout.strip()
    assert token == (home / TOKEN_FILE).read_text().strip()
    again = subprocess.run([sys.executable, "-m", "nova.cli.main", "serve", "--print-token"], env=nova_env(home),
                           capture_output=True, text=True, timeout=60)
    assert again.stdout.strip() == token


def test_serve_honours_nova_home_port_and_provider(tmp_path: Path) -> None:
    home = tmp_path / "home"
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.md").write_text("hello\n")
    sock = free_socket()
    port = sock.getsockname()[1]
    sock.close()  # the port is free; the server binds it next
    process = subprocess.Popen(
        [sys.executable, "-m", "nova.cli.main", "serve", "--port", str(port), "--provider", "demo", "--cwd", str(project)],
        env=nova_env(home), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        wait_serving(base, process)
        token = (home / TOKEN_FILE).read_text().strip()
        headers = {"authorization": f"Bearer {token}"}
        assert httpx.get(f"{base}/api/sessions", timeout=5).status_code == 401
        created = httpx.post(f"{base}/api/sessions", json={"title": "t"}, headers=headers, timeout=10).json()
        assert created["provider"] == "demo" and created["cwd"] == str(project)
        assert (home / "sessions" / created["id"]).is_dir()
        answer = httpx.post(f"{base}/api/sessions/{created['id']}/messages", json={"text": "what is here?"},
                            headers=headers, timeout=60)
        chunks, done = parse_sse(answer.content)
        assert done and "offline demo model" in "".join(texts_by_part(chunks))
    finally:
        process.terminate()
        try:
            out, _ = process.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            out, _ = process.communicate()
    # The token is printed once, on the first start.
    assert token in out and out.count(token) == 2  # the token line and the link
