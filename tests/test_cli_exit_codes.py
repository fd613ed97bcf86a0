"""`nova` exits 0 done, 1 error, 2 usage error, 3 refused, 130 interrupted: one table in docs/cli.md,
the same as `nova.cli.commands.exit_codes`, each status shown here from a real `nova` process (130 in
tests/test_cli_interrupt.py, the refused resume in tests/test_cli_resume_folder.py)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from nova.cli.commands.exit_codes import (
    EXIT_CODES,
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_REFUSED,
    EXIT_USAGE,
)

ROOT = Path(__file__).resolve().parents[1]


def nova(home: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NOVA_", "ANTHROPIC_", "OPENAI_"))}
    env["NOVA_HOME"] = str(home)
    return subprocess.run([sys.executable, "-m", "nova.cli.main", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, stdin=subprocess.DEVNULL, timeout=180)


def test_the_docs_table_is_the_code() -> None:
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    section = text.split("## Exit status", 1)[1].split("\n## ", 1)[0]
    rows = dict(re.findall(r"^\| (\d+) \| (.+) \|$", section, flags=re.MULTILINE))
    assert {int(k): v for k, v in rows.items()} == EXIT_CODES
    assert (EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_REFUSED, EXIT_INTERRUPTED) == (0, 1, 2, 3, 130)


def test_help_names_the_statuses_and_the_page(nova_home: Path) -> None:
    out = nova(nova_home, "--help")
    assert out.returncode == 0
    flat = " ".join(out.stdout.split())
    assert "0 done, 1 error, 2 usage error, 3 refused, 130 interrupted" in flat and "docs/cli.md" in flat
    run_help = " ".join(nova(nova_home, "run", "--help").stdout.split())
    assert "1 error; 2 usage error; 3 done, but tool calls were refused" in run_help


def test_an_error_exits_1(tmp_path: Path) -> None:
    out = nova(tmp_path / "home", "run", "hello", cwd=tmp_path)
    assert out.returncode == EXIT_ERROR, out.stderr
    assert "nova: error: No API key for provider 'anthropic'" in out.stderr and "Traceback" not in out.stderr
    unknown = nova(tmp_path / "home", "sessions", "show", "20990101-000000-abcdef")
    assert unknown.returncode == EXIT_ERROR, unknown.stderr


@pytest.mark.parametrize(("args", "said"), [
    (("run", "x", "--max-steps", "0"), "'--max-steps': 0 is not a number of model calls; give 1 or more"),
    (("run", "x", "--max-steps", "-1"), "'--max-steps': -1 is not a number of model calls; give 1 or more"),
    (("serve", "--port", "70000"), "'--port': 70000 is not a TCP port; give 1-65535"),
    (("serve", "--port", "-1"), "'--port': -1 is not a TCP port; give 1-65535"),
    (("run", "x", "--no-such-flag"), "No such option: --no-such-flag"),
    (("run",), "Missing argument"),
])
def test_a_usage_error_exits_2_naming_the_value(tmp_path: Path, args: tuple[str, ...], said: str) -> None:
    out = nova(tmp_path / "home", *args, cwd=tmp_path)
    assert out.returncode == EXIT_USAGE, out.stderr
    assert said in " ".join(out.stderr.split())
    assert not (tmp_path / "home" / "sessions").exists() or not any((tmp_path / "home" / "sessions").iterdir())


def test_refused_tool_calls_exit_3(tmp_path: Path) -> None:
    """The demo task headless without --yes: its bash and edit calls are refused, so the run exits 3."""
    from nova.agent.demo import DEMO_PROMPT, make_demo_project

    project = make_demo_project(tmp_path / "demo")
    out = nova(tmp_path / "home", "run", "--provider", "demo", "--model", "nova-demo", "--json", DEMO_PROMPT,
               cwd=project)
    assert out.returncode == EXIT_REFUSED, out.stderr
    refused = json.loads(out.stdout)["refused"]
    assert refused and {r["tool"] for r in refused} >= {"bash"}


def test_a_control_command_the_model_ran_is_refused_with_3(tmp_path: Path) -> None:
    """`nova config set` started below a Nova tool (the model running it through bash) is a policy
    refusal, not an error: 3, and the config is not written."""
    from nova.tools.policy.controls import tool_runner

    home = tmp_path / "home"
    with tool_runner(home):
        out = nova(home, "config", "set", "provider", "demo")
    assert out.returncode == EXIT_REFUSED, out.stderr
    assert "nova: refused: `nova config set` changes Nova's own controls" in out.stderr
    assert not (home / "config.json").exists()
