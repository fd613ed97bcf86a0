"""benchmarks/replay_fidelity.py and benchmarks/cost_vs_recorded.py find the sessions of a data folder as
`nova sessions import FOLDER` does: a Cline task folder is one session (its conversation file), the UI log
and task metadata beside it are not files the benchmarks failed to import."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

from nova.sessions.importers import read_session_file

ROOT = Path(__file__).resolve().parents[1]


def _benchmark(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _data(root: Path) -> Path:
    task = root / "sessions" / "somewhere" / "cline" / "1769000000000"
    task.mkdir(parents=True)
    (task / "api_conversation_history.json").write_text(json.dumps([
        {"role": "user", "content": [{"type": "text", "text": "<task>fix the parser</task>"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
    ]))
    (task / "ui_messages.json").write_text(json.dumps([{"ts": 1769000000000, "type": "say", "say": "text",
                                                        "text": "fix the parser"}]))
    (task / "task_metadata.json").write_text(json.dumps({"files_in_context": []}))
    codex = root / "sessions" / "somewhere" / "codex"
    codex.mkdir(parents=True)
    (codex / "rollout.jsonl").write_text(json.dumps({"type": "session_meta", "payload": {"id": "x"}}) + "\n")
    (codex / "notes.txt").write_text("not a session")
    trajectories = root / "trajectories" / "demo"
    trajectories.mkdir(parents=True)
    (trajectories / "a.traj").write_text("{}")
    (trajectories / "LICENSE").write_text("MIT")
    return task


@pytest.mark.parametrize("name", ["replay_fidelity", "cost_vs_recorded"])
def test_a_cline_task_folder_is_one_session(tmp_path: Path, name: str) -> None:
    task = _data(tmp_path)
    found = _benchmark(name).session_files(tmp_path)
    assert found == sorted([task / "api_conversation_history.json",
                            tmp_path / "sessions" / "somewhere" / "codex" / "rollout.jsonl",
                            tmp_path / "trajectories" / "demo" / "a.traj"])
    assert read_session_file(found[found.index(task / "api_conversation_history.json")]).messages


def test_window_raises_are_one_line_per_window_with_the_furthest() -> None:
    bench = _benchmark("replay_fidelity")
    raised = {16_000: [bench.Raised("a.jsonl", "truncate", 20_001, 17_000, 0),
                       bench.Raised("a.jsonl", "nova", 25_002, 17_000, 0),
                       bench.Raised("b.jsonl", "truncate", 20_001, 16_500, 300)],
              32_000: [bench.Raised("c.jsonl", "nova", 40_001, 31_000, 0)]}
    lines = bench.raised_lines(raised)
    assert len(lines) == 2
    assert lines[0].startswith("window raised at 16k: 3 replay(s) of 2 session(s)")
    assert "a.jsonl: nova ran at 25,002 (stand-in 17,000 fixed + 0 inlined)" in lines[0]
    assert lines[1].startswith("window raised at 32k: 1 replay(s) of 1 session(s)")
