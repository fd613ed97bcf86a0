"""One smoke test of the real `nova` command in a real terminal (tmux): it opens the TUI, answers, shows
the context bar, and quits on Ctrl-Q."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nova.agent.demo import make_demo_project

# Slow tier: the real nova command in a real terminal (tmux).
pytestmark = pytest.mark.slow

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def terminal_env() -> dict[str, str]:
    """The environment the tmux server (and so the pane) starts with: without COLUMNS and LINES, which a
    test run may have set (80 x 24), so the TUI measures the pane it is really in."""
    return {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}


def screen(tmux: list[str]) -> str:
    return subprocess.run([*tmux, "capture-pane", "-p", "-t", "nova"], capture_output=True, text=True).stdout


def wait_for(tmux: list[str], text: str, timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    shown = ""
    while time.monotonic() < deadline:
        shown = screen(tmux)
        if text in shown:
            return shown
        time.sleep(0.2)
    raise AssertionError(f"{text!r} never appeared; the screen was:\n{shown}")


def test_nova_opens_the_tui_in_a_terminal(nova_home: Path, tmp_path: Path) -> None:
    pytest.importorskip("textual", reason="the TUI needs the `tui` extra")
    tmux_bin = shutil.which("tmux")
    if tmux_bin is None:
        if IN_CI:
            pytest.fail("tmux is not installed — CI installs it in .ci/run")
        pytest.skip("tmux is not installed (apt-get install tmux)")
    nova = Path(sys.executable).parent / "nova"
    assert nova.exists(), f"the nova command is not installed next to {sys.executable}"
    project = make_demo_project(tmp_path / "project")
    tmux = [tmux_bin, "-L", f"nova-test-{os.getpid()}", "-f", "/dev/null"]
    subprocess.run([*tmux, "new-session", "-d", "-s", "nova", "-x", "120", "-y", "36", "-c", str(project),
                    "-e", f"NOVA_HOME={nova_home}", "-e", "NOVA_PROVIDER=demo", "-e", "NOVA_MODEL=nova-demo",
                    str(nova)], check=True, env=terminal_env())
    try:
        wait_for(tmux, "Ask Nova")
        subprocess.run([*tmux, "send-keys", "-t", "nova", "what is here?", "Enter"], check=True)
        shown = wait_for(tmux, "offline demo model")
        assert "context " in shown and "% " in shown and "tokens" in shown
        lines = shown.splitlines()
        bar = next(i for i, line in enumerate(lines) if "context " in line and "tokens" in line)
        prompt = next(i for i, line in enumerate(lines) if "Ask Nova" in line)
        assert bar < prompt  # the bar sits above the input (TUI-1)
        subprocess.run([*tmux, "send-keys", "-t", "nova", "C-q"], check=True)
        deadline = time.monotonic() + 30  # a bound for a hang: the turn may still be stopping
        while time.monotonic() < deadline:
            alive = subprocess.run([*tmux, "has-session", "-t", "nova"], capture_output=True).returncode == 0
            if not alive:
                break
            time.sleep(0.2)
        else:
            raise AssertionError("nova did not quit on Ctrl-Q:\n" + screen(tmux))
        assert list((nova_home / "sessions").iterdir()), "the conversation was not recorded"
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)


def test_approve_with_one_key_resume_with_tool_calls_and_exit_status(nova_home: Path, tmp_path: Path) -> None:
    """The user's path through the real command: the footer names the model and the cost, a tool call is
    approved with one key (no Enter), and `/resume last` in a new `nova` replays the session's tool calls
    without a crash; each `nova` exits 0 (a crash would exit non-zero)."""
    pytest.importorskip("textual", reason="the TUI needs the `tui` extra")
    from nova.agent.demo import DEMO_PROMPT

    tmux_bin = shutil.which("tmux")
    if tmux_bin is None:
        if IN_CI:
            pytest.fail("tmux is not installed — CI installs it in .ci/run")
        pytest.skip("tmux is not installed (apt-get install tmux)")
    nova = Path(sys.executable).parent / "nova"
    project = make_demo_project(tmp_path / "project")
    tmux = [tmux_bin, "-L", f"nova-test2-{os.getpid()}", "-f", "/dev/null"]
    script = f"{nova}; echo \"first exit $?\"; {nova}; echo \"second exit $?\"; sleep 60"
    subprocess.run([*tmux, "new-session", "-d", "-s", "nova", "-x", "160", "-y", "45", "-c", str(project),
                    "-e", f"NOVA_HOME={nova_home}", "-e", "NOVA_PROVIDER=demo", "-e", "NOVA_MODEL=nova-demo",
                    "sh", "-c", script], check=True, env=terminal_env())

    def keys(*args: str) -> None:
        subprocess.run([*tmux, "send-keys", "-t", "nova", *args], check=True)

    try:
        shown = wait_for(tmux, "Ask Nova")
        assert "nova-demo · context: nothing sent yet" in shown and "0 / 0" not in shown
        keys("-l", DEMO_PROMPT)
        keys("Enter")
        answered = 0
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            shown = screen(tmux)
            if "All tests pass now" in shown:
                break
            if "one key, no Enter" in shown:
                shown = wait_for(tmux, "asked because", timeout=10)  # the capture may catch the card half drawn
                assert "Allow " in shown
                keys("a")  # one key: always allow this tool in this session
                answered += 1
                time.sleep(0.5)
            time.sleep(0.2)
        else:
            raise AssertionError("the demo never finished:\n" + shown)
        assert answered >= 1, "no approval was asked"
        footer = next(line for line in shown.splitlines() if "cache hits" in line)
        assert "nova-demo · context " in footer and "cost $0.0000" in footer
        keys("C-q")
        wait_for(tmux, "Ask Nova")  # the second nova
        shown = wait_for(tmux, "nothing sent yet")
        keys("-l", "/resume last")
        keys("Enter")
        shown = wait_for(tmux, "Resumed session")
        assert "✓ glob(" in shown or "✓ bash(" in shown or "✓ edit_file(" in shown
        assert "Traceback" not in shown and "NoMatches" not in shown
        keys("C-q")
        shown = wait_for(tmux, "second exit")
        assert "first exit 0" in shown and "second exit 0" in shown
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)
