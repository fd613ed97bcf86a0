"""How `nova` tells that it was started by a command a Nova tool ran: the tool runner's mark, held by the
Nova process while a tool's process runs, is found in the parent chain whatever the environment says;
it names the Nova home, so a project's own tests with a home of their own are not refused; it ends
with the tool's process. Real subprocesses, real `/proc`."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from nova.tools.policy.controls import started_by_a_tool, tool_runner

if TYPE_CHECKING:
    from tests.security.conftest import BashMode


def bash(mode: BashMode, home: Path, project: Path) -> None:
    mode.run("true", home=home, cwd=project)


PROBE = ("import sys; from pathlib import Path; from nova.tools.policy.controls import started_by_a_tool; "
         "print(started_by_a_tool(Path(sys.argv[1])))")


def _probe(home: Path, *, env: dict[str, str] | None = None, shell_wrapper: str = "") -> str:
    argv = [sys.executable, "-c", PROBE, str(home)]
    if shell_wrapper:
        argv = ["bash", "-c", shell_wrapper.format(cmd=" ".join(shlex.quote(a) for a in argv))]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env, check=True).stdout.strip()


def test_nova_finds_the_tool_runner_in_its_parent_chain_whatever_the_environment(tmp_path: Path) -> None:
    home, other = tmp_path / "home", tmp_path / "other"
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    assert _probe(home, env=env) == "None"  # no tool running: a person
    with tool_runner(home):
        assert "Nova process" in _probe(home, env=env)
        assert "Nova process" in _probe(home, env=env, shell_wrapper="env -i PATH=$PATH PYTHONPATH=$PYTHONPATH {cmd}")
        assert "Nova process" in _probe(home, env=env, shell_wrapper="( ( {cmd} ) )")
        assert _probe(other, env=env) == "None"  # another home (a project's own tests) is not Nova's controls
    assert _probe(home, env=env) == "None"  # the mark ends with the tool's process
    assert started_by_a_tool(home, environ={"NOVA_TOOL_RUN": "unrelated"}) is None


def test_the_mark_is_released_when_the_command_ends(tmp_path: Path, bash_mode: BashMode) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    bash(bash_mode, home, project)
    assert started_by_a_tool(home) is None
    assert _probe(home, env={"PATH": os.environ["PATH"], "PYTHONPATH": os.environ.get("PYTHONPATH", "")}) == "None"
