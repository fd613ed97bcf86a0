"""`nova replay` gives the same figures and the same view for the same recording, byte for byte, whatever
the temporary directory it works in; a configured spill section scales with the window; a fixed prompt
over the window is one clear error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from nova.evaluation.replay import replay_messages
from nova.sessions.importers import read_session_file
from nova.settings import SpillConfig


def _recording(path: Path) -> Path:
    """A chat-list recording whose long failing outputs make an 8k replay spill, cut and compact."""
    messages: list[dict[str, object]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the failing tests in pkg/mod.py; keep the public API unchanged."},
    ]
    for i in range(14):
        call = {"id": f"call_{i}", "type": "function",
                "function": {"name": "bash", "arguments": json.dumps({"command": f"python -m pytest tests/t{i}.py"})}}
        messages.append({"role": "assistant", "content": f"Step {i}: run the tests.", "tool_calls": [call]})
        body = "\n".join(f"tests/t{i}.py::case_{k} FAILED at line {k}: value {k * 7}" for k in range(400))
        messages.append({"role": "tool", "tool_call_id": f"call_{i}", "content": body + "\nexit code 1"})
    messages.append({"role": "assistant", "content": "Done."})
    path.write_text(json.dumps(messages), encoding="utf-8")
    return path


def _replay(recording: Path, tmp: Path, home: Path, dump: Path) -> bytes:
    tmp.mkdir(parents=True)
    env = {**os.environ, "TMPDIR": str(tmp), "NOVA_HOME": str(home), "PYTHONHASHSEED": "random"}
    done = subprocess.run([sys.executable, "-m", "nova.cli.main", "replay", str(recording), "--window", "8000", "--json",
                           "--provider-cache", "anthropic", "--summarizer", "model-estimate",
                           "--price", "claude-sonnet-4-5", "--dump-view", str(dump)],
                          env=env, capture_output=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout


def test_two_replays_in_different_temporary_directories_give_the_same_bytes(tmp_path: Path) -> None:
    recording = _recording(tmp_path / "run.json")
    # Temporary directories of different lengths: a path written into the view would change its counts.
    first = _replay(recording, tmp_path / "a", tmp_path / "home", tmp_path / "view-1.json")
    second = _replay(recording, tmp_path / "tmp-dir-with-a-much-longer-name", tmp_path / "home",
                     tmp_path / "view-2.json")
    assert first == second
    assert (tmp_path / "view-1.json").read_bytes() == (tmp_path / "view-2.json").read_bytes()
    report = json.loads(first)
    assert report["spills"] > 0 and report["compactions"] > 0
    view = (tmp_path / "view-1.json").read_text(encoding="utf-8")
    assert "Full output saved to: replay-session/tool-results/" in view and str(tmp_path) not in view


def test_a_configured_spill_section_still_scales_with_the_window(tmp_path: Path) -> None:
    session = read_session_file(_recording(tmp_path / "run.json"))
    # The seeds' 50,000-character limit, as `nova replay` passes the config's spill section.
    report = replay_messages(session.messages, system=session.system, window=8000, spill=SpillConfig())
    assert report.spills > 0 and report.requests_over_window == 0


def test_a_fixed_prompt_over_the_window_is_one_clear_error(tmp_path: Path) -> None:
    recording = tmp_path / "big-system.json"
    recording.write_text(json.dumps([{"role": "system", "content": "rule " * 6000},
                                     {"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]))
    env = {**os.environ, "NOVA_HOME": str(tmp_path / "home")}
    done = subprocess.run([sys.executable, "-m", "nova.cli.main", "replay", str(recording), "--window", "4000"],
                          env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1
    assert "nova: error: The system prompt and tool schemas alone take about" in done.stderr
    assert "Traceback" not in done.stderr
