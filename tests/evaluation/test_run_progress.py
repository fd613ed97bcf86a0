"""The progress bar of `nova eval` / `nova replay`: a hook called once per simulated call, a bar only on a
terminal and only after the delay, nothing at all on a piped stderr."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from tests.evaluation.test_eval import _case
from typer.testing import CliRunner

from nova.cli.main import app
from nova.evaluation.cases import load_cases
from nova.evaluation.run import calls_of, run_case
from nova.present.run_progress import RunProgress
from nova.sessions.importers import read_session_file
from nova.tokens.counters import CL100K_PROFILE, HeuristicCounter


def test_the_hook_is_called_once_per_simulated_call_per_policy(tmp_path: Path) -> None:
    (case,) = load_cases(_case(tmp_path, policies=["naive", "nova"]))
    session = read_session_file(case.session)
    seen: list[int] = []
    results = run_case(case, session, counter=HeuristicCounter(CL100K_PROFILE), on_call=lambda: seen.append(1))
    assert len(seen) == calls_of(case, session) == sum(r.report.calls for r in results) == 8


def test_piped_stderr_gets_nothing_even_after_the_delay() -> None:
    stream = io.StringIO()
    with RunProgress(5, label="evaluating calls", stream=stream, delay_s=0.0) as bar:
        for _ in range(5):
            bar.advance()
    assert bar.done == 5
    assert stream.getvalue() == ""


def test_a_terminal_gets_a_bar_only_once_the_run_has_lasted_the_delay() -> None:
    now = [0.0]
    stream = io.StringIO()
    with RunProgress(4, label="evaluating calls", stream=stream, terminal=True, delay_s=2.0,
                     clock=lambda: now[0]) as bar:
        bar.advance()
        assert stream.getvalue() == ""  # a quick run never flashes a bar
        now[0] = 3.0
        bar.advance()
        bar.advance()
    assert "evaluating calls" in stream.getvalue()


@pytest.mark.parametrize("command", ["eval", "replay"])
def test_the_cli_prints_nothing_extra_on_a_piped_stderr(tmp_path: Path, command: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOVA_HOME", str(tmp_path / "home"))
    monkeypatch.setattr("nova.present.run_progress.DELAY_S", 0.0)
    case = _case(tmp_path)
    target = case if command == "eval" else tmp_path / "run.traj.json"
    result = CliRunner().invoke(app, [command, str(target), "--json"])
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    json.loads(result.stdout)
