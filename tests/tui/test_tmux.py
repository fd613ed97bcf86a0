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

from nova.demo import make_demo_project

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


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
                    str(nova)], check=True)
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
        deadline = time.monotonic() + 15
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
