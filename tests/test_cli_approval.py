"""`nova run` asks in a terminal (one key, no Enter), says which calls were refused and exits 3 for it;
the demo model reports a refused edit as refused. Real processes in a real pseudo-terminal."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nova.agent.demo import DEMO_PROMPT, make_demo_project

STATS_BUG = "sum(values) / (len(values) - 1)"


class Terminal:
    """A process whose stdin, stdout and stderr are one pseudo-terminal, read as plain text."""

    def __init__(self, args: list[str], *, env: dict[str, str], cwd: Path) -> None:
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen(args, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd,
                                     start_new_session=True)
        os.close(slave)
        self.output = ""

    def expect(self, pattern: str, timeout: float = 60.0) -> str:
        """Read until `pattern` (a regex) shows in the output after what was matched before."""
        deadline = time.monotonic() + timeout
        start = len(self.output)
        while not re.search(pattern, self.output[start:]):
            if time.monotonic() > deadline:
                raise AssertionError(f"{pattern!r} did not appear; output so far:\n{self.output}")
            if not self._read(0.2) and self.proc.poll() is not None and not self._read(0):
                raise AssertionError(f"the process ended before {pattern!r}:\n{self.output}")
        return self.output[start:]

    def press(self, key: str) -> None:
        os.write(self.master, key.encode())

    def finish(self, timeout: float = 60.0) -> int:
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None and time.monotonic() < deadline:
            self._read(0.2)
        while self._read(0.05):
            pass
        os.close(self.master)
        return self.proc.wait(timeout=5)

    def _read(self, wait: float) -> bool:
        ready, _, _ = select.select([self.master], [], [], wait)
        if not ready:
            return False
        try:
            data = os.read(self.master, 65536)
        except OSError:  # the other end closed
            return False
        self.output += re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", data.decode("utf-8", "replace")).replace("\r", "")
        return bool(data)


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, "NOVA_HOME": str(home), "NO_COLOR": "1", "COLUMNS": "300", "TERM": "xterm"}


def _nova(*args: str) -> list[str]:
    return [sys.executable, "-m", "nova.cli.main", *args]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_demo_project(tmp_path / "project")


def test_run_in_a_terminal_asks_with_one_key_and_reports_the_refused_edit(project: Path, nova_home: Path) -> None:
    term = Terminal(_nova("run", "--provider", "demo", DEMO_PROMPT), env=_env(nova_home), cwd=project)
    shown = term.expect(r"\[n\] deny")
    assert "? approve bash: python -m unittest -v 2>&1" in shown
    assert "asked because: bash can change files or run commands" in shown
    assert "allow for this session (every bash call)" in shown
    term.press("a")  # no Enter: the key alone answers
    term.expect(r"allowed for this session")
    shown = term.expect(r"\[n\] deny")
    # The second bash call is covered by the session grant; the edit is asked about.
    assert "? approve edit_file: calc/stats.py" in shown
    assert "approve bash" not in shown
    # The edit shows the unified diff it would make, under what it is.
    diff = shown[shown.index("? approve edit_file"):shown.index("asked because")]
    assert "    --- a/calc/stats.py\n    +++ b/calc/stats.py\n    @@ " in diff
    assert "    -    return sum(values) / (len(values) - 1)\n    +    return sum(values) / len(values)\n" in diff
    term.press("n")
    term.expect("denied")
    status = term.finish()
    tail = term.output[term.output.rindex("denied"):]
    assert "? approve" not in tail, "the last bash call ran under the session grant, without a prompt"
    assert "1 tool call was refused: edit_file(calc/stats.py)" in term.output
    assert "I changed nothing: my edit to `calc/stats.py` was refused" in term.output
    assert "I changed the denominator" not in term.output
    assert status == 3
    assert STATS_BUG in (project / "calc" / "stats.py").read_text()


def test_yes_key_allows_once_and_the_run_exits_zero(project: Path, nova_home: Path) -> None:
    term = Terminal(_nova("run", "--provider", "demo", DEMO_PROMPT), env=_env(nova_home), cwd=project)
    for _ in range(3):  # bash, edit_file, bash: "once" is asked again each time
        term.expect(r"\[n\] deny")
        term.press("y")
        term.expect("allowed once")
    assert term.finish() == 0
    assert "All tests pass now" in term.output and "I changed the denominator" in term.output
    assert "refused" not in term.output.split("allowed once")[-1]
    assert "sum(values) / len(values)" in (project / "calc" / "stats.py").read_text()


def test_yes_flag_asks_nothing_in_a_terminal(project: Path, nova_home: Path) -> None:
    term = Terminal(_nova("run", "--provider", "demo", "--yes", DEMO_PROMPT), env=_env(nova_home), cwd=project)
    assert term.finish() == 0
    assert "? approve" not in term.output and "All tests pass now" in term.output


def test_without_a_terminal_calls_are_refused_listed_in_json_and_exit_3(project: Path, nova_home: Path) -> None:
    proc = subprocess.run(_nova("run", "--provider", "demo", "--json", "--allow", "bash", DEMO_PROMPT),
                          capture_output=True, text=True, timeout=120, cwd=project, env=_env(nova_home),
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 3, proc.stderr
    outcome = json.loads(proc.stdout)
    assert [c["call"] for c in outcome["refused"]] == ["edit_file(calc/stats.py)"]
    assert "this run is not interactive" in outcome["refused"][0]["reason"]
    # The demo model reads its tool results: the refused edit is not claimed as done.
    assert "was refused" in outcome["text"] and "I changed the denominator" not in outcome["text"]
    assert "The tests still fail" in outcome["text"]


def test_run_help_documents_the_exit_status_and_the_keys() -> None:
    proc = subprocess.run(_nova("run", "--help"), capture_output=True, text=True, timeout=60,
                          env={**os.environ, "COLUMNS": "200"})
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())
    assert "3 done, but tool calls were refused" in text
    assert "y (once), a (for this session), n (deny)" in text
