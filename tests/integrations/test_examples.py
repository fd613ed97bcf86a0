"""The examples in examples/ run as they are (each framework's own test model, never the network), and an
adapter without its extra fails with the install line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = {"pydantic_ai_agent.py": "pydantic_ai", "openai_agents_agent.py": "agents",
            "langchain_agent.py": "langchain.agents"}


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "ANTHROPIC", "NOVA_"))}
    env["NOVA_HOME"] = str(tmp_path / "home")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    return env


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_the_example_runs_offline_and_reads_a_spilled_output_back(name: str, tmp_path: Path) -> None:
    pytest.importorskip(EXAMPLES[name], reason=f"the extra for {name} is not installed")
    done = subprocess.run([sys.executable, str(ROOT / "examples" / name)], env=_env(tmp_path), cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[0] == "Three days of builds, all green."
    assert lines[1].startswith("spilled outputs: 3; read back: 1 (") and "day 0 step 0: ok" in lines[1]
    # The run was recorded where NOVA_HOME says.
    session = lines[2].rsplit(" ", 1)[1]
    assert (tmp_path / "home" / "sessions" / session / "transcript.jsonl").stat().st_size > 0


@pytest.mark.parametrize(("adapter", "module", "extra"), [
    ("pydantic_ai", "pydantic_ai", "pydantic-ai"),
    ("openai_agents", "agents", "openai-agents"),
    ("langchain", "langchain", "langchain"),
])
def test_an_adapter_without_its_extra_names_the_install_line(adapter: str, module: str, extra: str,
                                                            tmp_path: Path) -> None:
    # The framework made unimportable, as it is when the extra is not installed.
    code = (f"import sys; sys.modules[{module!r}] = None\n"
            "from nova.errors import MissingDependency\n"
            "try:\n"
            f"    import nova.integrations.{adapter}\n"
            "except MissingDependency as exc:\n"
            "    print(exc)\n")
    done = subprocess.run([sys.executable, "-c", code], env=_env(tmp_path), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"pip install 'nova-context-engine[{extra}]'" in done.stdout
    assert f"nova.integrations.{adapter}" in done.stdout


def test_importing_nova_integrations_imports_no_framework(tmp_path: Path) -> None:
    code = ("import sys, nova, nova.integrations, nova.integrations._engine\n"
            "print(sorted(m for m in ('pydantic_ai', 'agents', 'langchain', 'langgraph') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], env=_env(tmp_path), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
