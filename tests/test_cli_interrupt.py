"""What an interrupted `nova run` leaves: Ctrl-C says the session was kept and the exact command that
resumes it (exit 130); a kill -9 in the middle of a tool call leaves a call without a result, which the
resume answers "interrupted" in the record as well as in the request.

Each is a real `nova` process whose model is a scripted one that stops to wait at a chosen point (it
touches a file there, which the test waits for): no test depends on how long anything takes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

# `nova` with its provider replaced by a scripted model: the first call asks for one tool call (given as
# JSON in NOVA_TEST_CALL); the next one touches NOVA_TEST_MARK and waits until it is interrupted.
_SLOW_NOVA = """
import json, os, sys, time
import nova.agent.provider_factory as factory
from nova.providers.scripted import FunctionProvider, call, reply

def answer(request):
    if not any(m.tool_results() for m in request.messages):
        name, arguments = json.loads(os.environ["NOVA_TEST_CALL"])
        return reply("Looking first.", [call(name, **arguments)])
    open(os.environ["NOVA_TEST_MARK"], "w").close()
    while True:
        time.sleep(0.05)

factory.make_provider = lambda settings, env: FunctionProvider(answer)
from nova.cli.main import main
sys.argv = ["nova", *sys.argv[1:]]
main()
"""


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NOVA_", "ANTHROPIC_", "OPENAI_"))}
    return {**env, "NOVA_HOME": str(home), **extra}


def _start(home: Path, project: Path, mark: Path, tool_call: tuple[str, dict[str, Any]], *args: str) -> subprocess.Popen[str]:
    env = _env(home, NOVA_TEST_MARK=str(mark), NOVA_TEST_CALL=json.dumps(tool_call))
    return subprocess.Popen([sys.executable, "-c", _SLOW_NOVA, "run", "--provider", "demo", "--model", "nova-demo",
                             *args], cwd=project, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def _wait_for(path: Path, proc: subprocess.Popen[str]) -> None:
    """Until the model reached its waiting point; fails (with the process's output) if it exited first."""
    deadline = time.monotonic() + 120
    while not path.exists():
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"nova exited {proc.returncode} before the waiting point:\n{out}\n{err}")
        assert time.monotonic() < deadline, "the scripted model never reached its waiting point"
        time.sleep(0.02)


def _records(home: Path, session_id: str) -> list[dict[str, Any]]:
    out = subprocess.run([sys.executable, "-m", "nova.cli.main", "sessions", "export", session_id],
                         capture_output=True, text=True, env=_env(home), timeout=120)
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


def _only_session(home: Path) -> str:
    [session_id] = [p.name for p in (home / "sessions").iterdir() if p.is_dir()]
    return session_id


def test_ctrl_c_says_the_session_was_kept_and_how_to_resume_it(tmp_path: Path) -> None:
    home, project, mark = tmp_path / "home", tmp_path / "project", tmp_path / "waiting"
    project.mkdir()
    (project / "notes.md").write_text("notes\n")
    proc = _start(home, project, mark, ("glob", {"pattern": "*"}), "look around")
    _wait_for(mark, proc)
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    session_id = _only_session(home)
    lines = [line for line in err.splitlines() if line.startswith("nova: interrupted")]
    assert lines == [f'nova: interrupted; session {session_id} was kept. Resume it with: '
                     f'nova resume {session_id} "go on"'], err
    assert "Traceback" not in err
    # The command it prints works: the session goes on, on the demo model it was recorded with.
    resumed = subprocess.run([sys.executable, "-m", "nova.cli.main", "resume", session_id, "go on"],
                             capture_output=True, text=True, env=_env(home), cwd=project, timeout=120,
                             stdin=subprocess.DEVNULL)
    assert resumed.returncode == 0, resumed.stderr
    texts = [p.get("text") for r in _records(home, session_id) if r["type"] == "message"
             for p in r["message"]["parts"]]
    assert "look around" in texts and "go on" in texts


def test_a_kill_mid_tool_call_is_answered_interrupted_in_the_record_on_resume(tmp_path: Path) -> None:
    home, project, mark = tmp_path / "home", tmp_path / "project", tmp_path / "running"
    project.mkdir()
    # The tool call itself is where the process dies: bash touches the mark, then waits.
    command = f"touch {mark}; sleep 600"
    proc = _start(home, project, tmp_path / "never", ("bash", {"command": command}), "run it", "--yes",
                  "--no-sandbox")
    _wait_for(mark, proc)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    session_id = _only_session(home)

    def calls_and_results() -> tuple[set[str], dict[str, str]]:
        calls, results = set(), {}
        for r in _records(home, session_id):
            if r["type"] != "message":
                continue
            for p in r["message"]["parts"]:
                if p.get("kind") == "tool_use" or ("name" in p and "input" in p):
                    calls.add(p["id"])
                elif "tool_use_id" in p:
                    results[p["tool_use_id"]] = p.get("content", "")
        return calls, results

    calls, results = calls_and_results()
    [dangling] = calls - set(results)  # the record as the kill left it: a call without a result

    resumed = subprocess.run([sys.executable, "-m", "nova.cli.main", "resume", session_id, "what happened?"],
                             capture_output=True, text=True, env=_env(home), cwd=project, timeout=120,
                             stdin=subprocess.DEVNULL)
    assert resumed.returncode == 0, resumed.stderr
    assert "1 unanswered tool call(s) marked interrupted" in resumed.stderr
    calls, results = calls_and_results()
    assert calls <= set(results)  # every call now has its result in the record
    assert results[dangling].startswith("interrupted: the session stopped before this tool call")

    # A second resume finds nothing left to repair: the record says what the view said.
    again = subprocess.run([sys.executable, "-m", "nova.cli.main", "resume", session_id, "and now?"],
                           capture_output=True, text=True, env=_env(home), cwd=project, timeout=120,
                           stdin=subprocess.DEVNULL)
    assert again.returncode == 0, again.stderr
    assert "marked interrupted" not in again.stderr
