"""Approvals on the web page in Debian's headless chromium: the buttons answer, a denied call is marked."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from nova.agent.demo import DEMO_PROMPT
from nova.server.config import ServerConfig

from .helpers import JS_DIR, require_browser, running_server

# Slow tier: the page in headless Chromium.
pytestmark = pytest.mark.slow


def test_page_approves_with_a_button_and_marks_a_denied_call(nova_home: Path, project: Path, tmp_path: Path) -> None:
    node = require_browser()
    screenshot = tmp_path / "nova-approvals.png"
    with running_server(nova_home, project, yes=False) as server:
        run = subprocess.run(
            [node, str(JS_DIR / "approval_check.mjs"), server.base, server.token, DEMO_PROMPT, str(screenshot),
             str(tmp_path / "chromium-profile")],
            capture_output=True, text=True, timeout=240, cwd=JS_DIR,
        )
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result.get("ok"), result.get("error")
    assert result["consoleErrors"] == []
    first, second = result["questions"]
    # What the call does, why it is asked, and the three answers.
    assert first["what"] == "Approve bash: python -m unittest -v 2>&1?"
    assert "bash can change files or run commands" in first["why"] and "300 s" in first["why"]
    assert first["buttons"] == ["Allow once", "Allow for session", "Deny"]
    assert first["sessionTitle"] == "Allows every bash call while this session is open"
    assert second["what"] == "Approve edit_file: calc/stats.py?"
    # Allowed for the session, so the last test run was not asked about; the edit was denied.
    assert result["unanswered"] == 0
    assert result["answers"] == ["allowed for this session", "denied"]
    assert len(result["deniedLive"]) == 1 and result["deniedLive"][0].startswith("edit_file(")
    assert result["deniedLive"][0].endswith("denied")
    assert result["deniedRecorded"] == result["deniedLive"]
    assert any("was refused" in t for t in result["assistantText"])
    assert not any("I changed the denominator" in t for t in result["assistantText"])
    assert "sum(values) / (len(values) - 1)" in (project / "calc" / "stats.py").read_text()
    assert screenshot.stat().st_size > 10_000
    print(f"screenshot: {screenshot}")


def test_a_reloaded_page_asks_again_and_its_answer_runs_the_call(nova_home: Path, project: Path,
                                                                 tmp_path: Path) -> None:
    node = require_browser()
    screenshot = tmp_path / "nova-approval-reload.png"
    with running_server(nova_home, project, yes=False) as server:
        run = subprocess.run(
            [node, str(JS_DIR / "approval_reload_check.mjs"), server.base, server.token, DEMO_PROMPT,
             str(screenshot), str(tmp_path / "chromium-profile")],
            capture_output=True, text=True, timeout=240, cwd=JS_DIR,
        )
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result.get("ok"), result.get("error")
    assert result["consoleErrors"] == []
    live, returned, reloaded, followed, back, last = result["questions"]
    # The same question after leaving the session and coming back and after the reload, with its
    # deadline, and the page knows the turn still runs.
    assert live["what"] == returned["what"] == reloaded["what"] == "Approve bash: python -m unittest -v 2>&1?"
    for asked in result["questions"]:
        assert re.fullmatch(r"denied at \S+( [AP]M)? if not answered \([0-5]:[0-5]\d left\)", asked["deadline"]), asked
        assert asked["busy"] == "true"
    assert result["sendDisabled"] is True
    # Answered on the reloaded page, the turn went on to the edit, shown with its diff, again after
    # switching to another session (which is not busy) and back.
    assert followed["what"] == back["what"] == "Approve edit_file: calc/stats.py?"
    for asked in (followed, back):
        assert asked["diffRemoved"] == ["-    return sum(values) / (len(values) - 1)"]
        assert asked["diffAdded"] == ["+    return sum(values) / len(values)"]
    assert result["busyInOtherSession"] == "false"
    assert last["what"] == "Approve bash: python -m unittest -v tests.test_stats 2>&1?" and last["diffAdded"] == []
    assert result["unanswered"] == 0 and result["denied"] == 0
    assert "sum(values) / len(values)" in (project / "calc" / "stats.py").read_text()
    assert len(result["tools"]) >= 3
    assert screenshot.stat().st_size > 10_000


def test_a_card_nobody_answers_says_it_timed_out(nova_home: Path, project: Path, tmp_path: Path) -> None:
    node = require_browser()
    with running_server(nova_home, project, yes=False, config=ServerConfig(approval_timeout_s=1)) as server:
        run = subprocess.run(
            [node, str(JS_DIR / "approval_timeout_check.mjs"), server.base, server.token, DEMO_PROMPT,
             str(tmp_path / "chromium-profile")],
            capture_output=True, text=True, timeout=240, cwd=JS_DIR,
        )
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result.get("ok"), result.get("error")
    assert result["consoleErrors"] == []
    # Every card says it timed out, and no longer offers buttons or a deadline.
    assert result["cards"] == 3 and result["answers"] == ["timed out after 1 s: denied"] * 3
    assert result["deadlinesLeft"] == 0 and result["buttonsLeft"] == 0
    # The denial under each call says why.
    assert len(result["deniedOutputs"]) == 3
    assert all("timed out after 1 s" in text for text in result["deniedOutputs"])
