"""Shared by the security tests: `bash_mode` runs an end-to-end `bash` case twice, with the permission
rules and shell parser alone and again inside the bubblewrap sandbox, because the policy must hold the
same in both (the sandbox bounds what a command can do, never what the rules let run)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from nova.agent.builder import AgentOptions, build_agent
from nova.errors import ConfigError
from nova.messages import ToolResultPart
from nova.settings import load_settings
from nova.testing import ScriptedProvider, call, reply
from nova.tools.policy.sandbox import require_bubblewrap


def bubblewrap_problem() -> str | None:
    """Why the sandbox cannot run on this machine, or None."""
    try:
        require_bubblewrap()
    except ConfigError as exc:
        return str(exc)
    return None


@dataclass(frozen=True)
class BashMode:
    sandbox: bool

    @property
    def name(self) -> str:
        return "sandbox" if self.sandbox else "policy-only"

    def run(self, command: str, *, home: Path, cwd: Path, config: Mapping[str, Any] | None = None,
            allow: Sequence[str] = (), yes: bool = True) -> ToolResultPart:
        """One scripted model turn that calls `bash` with `command` through a real agent built by
        `build_agent` from `home`/config.json (plus `config` and this mode's `sandbox`), as `nova run`
        would; the tool result the model got back."""
        home.mkdir(parents=True, exist_ok=True)
        path = home / "config.json"
        written = json.loads(path.read_text()) if path.exists() else {}
        path.write_text(json.dumps({**written, **(config or {}), "sandbox": self.sandbox}))
        settings = load_settings(home=home, env={}, overrides={"provider": "demo", "model": "demo"})
        provider = ScriptedProvider([reply("", [call("bash", command=command)]), reply("done")])
        agent = build_agent(settings, provider, AgentOptions(cwd=cwd, yes=yes, allowed_tools=frozenset(allow)))
        try:
            agent.run_turn("run it")
        finally:
            agent.close()
        return next(r for m in agent.history for r in m.tool_results())


@pytest.fixture(params=[False, True], ids=["policy-only", "sandbox"])
def bash_mode(request: pytest.FixtureRequest) -> BashMode:
    """Parametrizes a test over both modes; the sandbox half is skipped, with the reason, where
    bubblewrap is missing or cannot create namespaces."""
    if request.param:
        problem = bubblewrap_problem()
        if problem:
            pytest.skip(problem)
    return BashMode(sandbox=request.param)


@pytest.fixture()
def sandboxed() -> BashMode:
    """The sandbox mode only, skipped with the reason where bubblewrap cannot run."""
    problem = bubblewrap_problem()
    if problem:
        pytest.skip(problem)
    return BashMode(sandbox=True)
