"""The public API is a contract: `nova.__all__` is exactly what docs/api.md lists, every name resolves to
its home module, importing `nova` loads none of them, and the page's examples run as written."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

import nova
import nova.testing
import nova.version
from nova import AgentOptions, build_agent, load_settings

DOC = Path(__file__).resolve().parents[1] / "docs" / "api.md"


def documented_names() -> list[str]:
    """The names in the first column of the page's table."""
    return re.findall(r"^\| `([A-Za-z_][A-Za-z0-9_]*)` \|", DOC.read_text(encoding="utf-8"), re.MULTILINE)


def examples() -> list[str]:
    return re.findall(r"^```python\n(.*?)^```$", DOC.read_text(encoding="utf-8"), re.MULTILINE | re.DOTALL)


def test_all_is_exactly_the_documented_set() -> None:
    documented = documented_names()
    assert len(documented) == len(set(documented)), "a name is listed twice in docs/api.md"
    assert sorted(nova.__all__) == sorted(documented)
    assert len(nova.__all__) == len(set(nova.__all__))
    assert sorted(dir(nova)) == sorted(nova.__all__)


def test_every_public_name_resolves_to_a_nova_module() -> None:
    for name in nova.__all__:
        value = getattr(nova, name)
        if name == "__version__":
            assert value == nova.version.__version__ and re.fullmatch(r"\d+\.\d+\.\d+\S*", value)
            continue
        assert value.__name__ == name, name
        assert value.__module__.startswith("nova."), (name, value.__module__)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="module 'nova' has no attribute 'build_agents'"):
        nova.build_agents  # noqa: B018


def test_a_star_import_gives_exactly_the_public_names() -> None:
    namespace: dict[str, Any] = {}
    exec("from nova import *", namespace)
    assert sorted(set(namespace) - {"__builtins__"}) == sorted(nova.__all__)


def test_importing_nova_loads_nothing_it_names() -> None:
    # A fresh interpreter: what `import nova` and `import nova.messages` cost.
    code = "import json, sys, nova, nova.messages; print(json.dumps(sorted(sys.modules)))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    loaded = set(json.loads(proc.stdout))
    heavy = {"nova.agent", "nova.context", "nova.evaluation", "nova.providers", "nova.sessions", "nova.settings"}
    assert sorted(loaded & heavy) == []


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The examples make their directories with `tempfile`: here they land under the test's own."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def run_example(index: int) -> dict[str, Any]:
    code = examples()[index]
    namespace: dict[str, Any] = {"__name__": "docs_api_example"}
    exec(compile(code, f"{DOC} (example {index + 1})", "exec"), namespace)
    return namespace


def test_the_page_has_its_two_examples() -> None:
    assert len(examples()) == 2


def test_the_agent_session_and_replay_example_runs(private_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ns = run_example(0)
    out = capsys.readouterr().out
    result, status, report, history = ns["result"], ns["status"], ns["report"], ns["history"]
    assert result.stop_reason == "end_turn" and result.text in out
    # The extension saw every call; the reopened session holds the turn; the replay makes the same calls.
    assert ns["counter"].calls == result.steps == report.calls > 0
    assert [m.id for m in history] == [m.id for m in result.messages]
    assert 0 < status.used < status.limit and f"context: {status.used:,} of {status.limit:,} tokens" in out
    assert f"replay: {report.calls} calls" in out and report.invariant_violations == 0
    assert str(private_tmp) in str(ns["root"])


def test_the_testing_example_runs(private_tmp: Path) -> None:
    ns = run_example(1)
    assert ns["result"].text == "One file: hello.py."


def test_the_fakes_stay_importable_from_nova_testing(tmp_path: Path) -> None:
    from nova.testing import FunctionProvider, ScriptedProvider, call, reply

    assert {"FunctionProvider", "ScriptedProvider", "call", "reply"} <= set(nova.testing.__all__)
    settings = load_settings(home=tmp_path / "home", env={}, overrides={"provider": "demo", "model": "nova-demo"})
    scripted = ScriptedProvider([reply("", [call("glob", pattern="*")]), reply("listed")])
    agent = build_agent(settings, scripted, AgentOptions(cwd=tmp_path, yes=True))
    assert agent.run_turn("list").text == "listed" and len(scripted.requests) == 2
    agent.close()
    asked: list[bool] = []

    def answer(request: Any) -> Any:
        asked.append(any(m.text == "ping" for m in request.messages))
        return reply("pong")

    agent = build_agent(settings, FunctionProvider(answer), AgentOptions(cwd=tmp_path))
    assert agent.run_turn("ping").text == "pong" and asked == [True]
    agent.close()
