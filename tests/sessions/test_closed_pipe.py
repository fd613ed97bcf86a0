"""`nova … | head`: a reader that stops early ends the command quietly, whatever the command writes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nova.messages import Message, TextPart
from nova.sessions.session import Session

# Far more than a pipe holds (64 KiB on Linux), so the command is still writing when the reader leaves.
LONG = "\n".join(f"line {i}: " + "x" * 70 for i in range(6000))


def _long_session(home: Path) -> str:
    session = Session.create(home, title="long", cwd=str(home), provider="demo", model="nova-demo")
    session.record_message(Message(role="user", parts=(TextPart(LONG),), id="m1"))
    session.record_message(Message(role="assistant", parts=(TextPart(LONG),), id="m2"))
    session.close()
    return session.id


@pytest.mark.parametrize("args", [
    ["sessions", "export", "last"],
    ["sessions", "export", "last", "--format", "md"],
    ["sessions", "show", "last", "--full"],
], ids=["export-jsonl", "export-md", "show-full"])
def test_a_reader_that_stops_early_gets_no_error(args: list[str], nova_home: Path) -> None:
    _long_session(nova_home)
    process = subprocess.Popen([sys.executable, "-m", "nova.cli.main", *args], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env={**os.environ, "NOVA_HOME": str(nova_home)})
    assert process.stdout is not None and process.stderr is not None
    assert process.stdout.readline()  # like `head -1`: one line, then the pipe is closed
    process.stdout.close()
    err = process.stderr.read().decode()
    process.wait(60)
    process.stderr.close()
    assert err == ""
    assert process.returncode in (0, 1)  # 1 is click's status for a closed pipe; never 2 or a traceback
