"""One writer per session across processes: a second process that resumes a session another one holds
open is refused with the holder's pid, a lock left by a killed process is taken over, the server's host
holds the lock too, and meta.json never undercounts what the transcript holds."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from nova.agent.builder import AgentOptions
from nova.errors import SessionLocked
from nova.host.hub import SessionHub
from nova.messages import Message
from nova.sessions.session import Session
from nova.settings import load_settings
from nova.testing import FunctionProvider, reply

NOVA = Path(sys.executable).with_name("nova")

# Holds a session open for writing until its stdin closes, like a `nova resume` in the middle of a turn.
HOLDER = """
import sys
from pathlib import Path
from nova.messages import Message
from nova.sessions.session import Session
session = Session.open(Path(sys.argv[1]), sys.argv[2])
session.record_message(Message.user("from the holder"))
session.flush()
print("holding", flush=True)
sys.stdin.read()
session.record_message(Message.user("holder again"))
session.close()
"""


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, "NOVA_HOME": str(home)}


def _run(home: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(NOVA), *args], cwd=cwd, env=_env(home), capture_output=True, text=True, timeout=120)


def _first_session(home: Path, cwd: Path) -> str:
    done = _run(home, cwd, "run", "first task", "--provider", "demo", "--json")
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["session_id"])


def _hold(home: Path, session_id: str) -> subprocess.Popen[str]:
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(home), session_id], env=_env(home),
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert holder.stdout is not None
    assert holder.stdout.readline().strip() == "holding", holder.stderr.read() if holder.stderr else ""
    return holder


def _message_records(directory: Path) -> int:
    lines = (directory / "transcript.jsonl").read_bytes().splitlines()
    return sum(1 for line in lines if json.loads(line).get("type") == "message")


# Slow tier: two real nova processes each, one kept waiting while the other is refused.
@pytest.mark.slow
@pytest.mark.parametrize("command", ["resume", "run --resume"])
def test_a_second_process_is_refused_with_the_holders_pid(nova_home: Path, tmp_path: Path, command: str) -> None:
    session_id = _first_session(nova_home, tmp_path)
    directory = nova_home / "sessions" / session_id
    holder = _hold(nova_home, session_id)
    try:
        before = (directory / "transcript.jsonl").read_bytes()
        if command == "resume":
            second = _run(nova_home, tmp_path, "resume", session_id, "second task", "--provider", "demo")
        else:
            second = _run(nova_home, tmp_path, "run", "second task", "--resume", session_id, "--provider", "demo")
        assert second.returncode != 0
        assert f"session {session_id} is busy, held by pid {holder.pid} (since " in second.stderr
        assert "Traceback" not in second.stderr
        assert (directory / "transcript.jsonl").read_bytes() == before  # the refused process wrote nothing
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        assert holder.wait(timeout=60) == 0
    # Once the holder is gone the session is free, and every message is counted.
    done = _run(nova_home, tmp_path, "resume", session_id, "third task", "--provider", "demo", "--json")
    assert done.returncode == 0, done.stderr
    meta = json.loads((directory / "meta.json").read_text())
    assert meta["message_count"] == _message_records(directory)


def test_a_lock_left_by_a_killed_process_is_taken_over(nova_home: Path, tmp_path: Path) -> None:
    session_id = _first_session(nova_home, tmp_path)
    holder = _hold(nova_home, session_id)
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=60)
    assert str(holder.pid) in (nova_home / "sessions" / session_id / "session.lock").read_text()  # stale note
    done = _run(nova_home, tmp_path, "resume", session_id, "after the crash", "--provider", "demo", "--json")
    assert done.returncode == 0, done.stderr
    directory = nova_home / "sessions" / session_id
    texts = (directory / "transcript.jsonl").read_text()
    assert "from the holder" in texts and "after the crash" in texts
    assert json.loads((directory / "meta.json").read_text())["message_count"] == _message_records(directory)


# Slow tier: a real server and a real nova process racing for one session.
@pytest.mark.slow
def test_the_server_host_holds_the_lock_while_a_session_is_open(nova_home: Path, tmp_path: Path) -> None:
    session_id = _first_session(nova_home, tmp_path)
    settings = load_settings(env={"NOVA_HOME": str(nova_home)}, overrides={"provider": "demo", "model": "nova-demo"})
    hub = SessionHub(settings, options=AgentOptions(cwd=tmp_path, yes=True),
                     make_provider=lambda: FunctionProvider(lambda _request: reply("done")))
    try:
        hub.live(session_id)
        second = _run(nova_home, tmp_path, "resume", session_id, "from the terminal", "--provider", "demo")
        assert second.returncode != 0
        assert f"held by pid {os.getpid()}" in second.stderr
    finally:
        hub.close()
    # The hub let go when it closed: the terminal can write now.
    done = _run(nova_home, tmp_path, "resume", session_id, "from the terminal", "--provider", "demo", "--json")
    assert done.returncode == 0, done.stderr


def test_a_server_cannot_open_a_session_a_terminal_holds(nova_home: Path, tmp_path: Path) -> None:
    session_id = _first_session(nova_home, tmp_path)
    holder = _hold(nova_home, session_id)
    try:
        with pytest.raises(SessionLocked, match=f"held by pid {holder.pid}"):
            Session.open(nova_home, session_id)
        readonly = Session.open(nova_home, session_id, readonly=True)  # readers are never blocked
        assert any(m.text == "from the holder" for m in readonly.load_history())
        readonly.close()
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=60)
    session = Session.open(nova_home, session_id)
    session.record_message(Message.user("mine now"))
    session.close()
    directory = nova_home / "sessions" / session_id
    assert json.loads((directory / "meta.json").read_text())["message_count"] == _message_records(directory)


def test_a_writer_killed_before_its_turn_end_leaves_no_undercount(nova_home: Path, tmp_path: Path) -> None:
    session_id = _first_session(nova_home, tmp_path)
    directory = nova_home / "sessions" / session_id
    killed = ("import os, signal, sys\nfrom pathlib import Path\nfrom nova.messages import Message\n"
              "from nova.sessions.session import Session\n"
              "s = Session.open(Path(sys.argv[1]), sys.argv[2])\n"
              "s.record_message(Message.user('appended, never flushed'))\n"
              "s.record_message(Message.user('this one too'))\n"
              "os.kill(os.getpid(), signal.SIGKILL)\n")
    done = subprocess.run([sys.executable, "-c", killed, str(nova_home), session_id], env=_env(nova_home),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert json.loads((directory / "meta.json").read_text())["message_count"] < _message_records(directory)
    after = _run(nova_home, tmp_path, "resume", session_id, "next", "--provider", "demo", "--json")
    assert after.returncode == 0, after.stderr
    assert "meta.json counted" in after.stderr
    assert json.loads((directory / "meta.json").read_text())["message_count"] == _message_records(directory)
