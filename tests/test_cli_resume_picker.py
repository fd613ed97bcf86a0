"""`nova resume` with the session left out: a numbered picker of this project's sessions at a terminal,
a usage error naming how to give one in a script. Real processes; the terminal is a real pty."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from nova.agent.demo import make_demo_project
from nova.sessions.meta import read_meta, session_dir
from nova.sessions.session import Session

from .test_cli_approval import Terminal, _env, _nova


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_demo_project(tmp_path / "project")


def recorded(home: Path, cwd: Path, title: str) -> str:
    with Session.create(home, title=title, cwd=cwd, provider="demo", model="nova-demo") as session:
        session_id = session.meta.id
    time.sleep(0.01)  # the next one is newer
    return session_id


def test_at_a_terminal_the_sessions_are_numbered_and_one_is_chosen(project: Path, nova_home: Path,
                                                                  tmp_path: Path) -> None:
    older = recorded(nova_home, project, "the older one")
    recorded(nova_home, tmp_path, "not this project")
    newer = recorded(nova_home, project, "the newer one")
    term = Terminal(_nova("resume", "--provider", "demo"), env=_env(nova_home), cwd=project)
    shown = term.expect(r"Number \(Enter: 1, q: cancel\) \[1-2\]: ")
    assert f"Resume which session of {project}?" in shown
    assert f"1. {newer} · the newer one · 0 messages · " in shown
    assert f"2. {older} · the older one · 0 messages · " in shown
    assert "not this project" not in shown
    term.press("7\n")
    term.expect("7 is not a number from 1 to 2")
    term.press("2\n")
    term.expect("Next request: ")
    term.press("what is here?\n")
    assert term.finish() == 0
    assert "offline demo model" in term.output
    assert read_meta(session_dir(nova_home, older)).message_count > 0
    assert read_meta(session_dir(nova_home, newer)).message_count == 0


def test_one_argument_that_is_no_session_is_the_request(project: Path, nova_home: Path) -> None:
    only = recorded(nova_home, project, "the only one")
    term = Terminal(_nova("resume", "--provider", "demo", "what is here?"), env=_env(nova_home), cwd=project)
    term.expect(r"\[1-1\]: ")
    term.press("\n")  # Enter takes the newest
    assert term.finish() == 0
    assert read_meta(session_dir(nova_home, only)).message_count > 0


def test_q_cancels_and_nothing_is_resumed(project: Path, nova_home: Path) -> None:
    only = recorded(nova_home, project, "left alone")
    term = Terminal(_nova("resume", "--provider", "demo"), env=_env(nova_home), cwd=project)
    term.expect(r"\[1-1\]: ")
    term.press("q\n")
    assert term.finish() == 1
    assert "Nothing resumed." in term.output
    assert read_meta(session_dir(nova_home, only)).message_count == 0


def test_without_a_terminal_it_is_a_usage_error_naming_how_to_give_the_session(project: Path,
                                                                               nova_home: Path) -> None:
    only = recorded(nova_home, project, "a recorded one")
    run = subprocess.run([sys.executable, "-m", "nova.cli.main", "resume", "--provider", "demo"],
                         env=_env(nova_home), cwd=project, stdin=subprocess.DEVNULL, capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 2, run.stderr
    error = " ".join(run.stderr.split())
    assert 'nova resume ID "next request"' in error and 'nova resume last "next request"' in error
    assert "nova sessions list" in error
    assert f"Recent sessions of {project}: {only} · a recorded one" in error
    missing = subprocess.run([sys.executable, "-m", "nova.cli.main", "resume", "last"], env=_env(nova_home),
                             cwd=project, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert missing.returncode == 2
    assert 'the next request is missing: `nova resume last "next request"`' in " ".join(missing.stderr.split())
    assert read_meta(session_dir(nova_home, only)).message_count == 0
