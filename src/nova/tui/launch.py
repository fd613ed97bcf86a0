"""`nova` with no arguments in a terminal: the TUI on the configured provider, in the current folder."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nova.agent.builder import AgentOptions
from nova.agent.provider_factory import make_provider
from nova.host.hub import SessionHub
from nova.settings import Settings
from nova.tui.approval import ScreenApprovals

if TYPE_CHECKING:
    from textual.app import App

__all__ = ["launch_tui", "make_hub", "run_app"]


def make_hub(settings: Settings, *, cwd: Path, env: dict[str, str]) -> SessionHub:
    make_provider(settings, env)  # a missing key or SDK stops here, before the screen opens
    # Interactive: a write or a command the rules do not settle is put to the person at the terminal, by
    # the approver each session gets as it opens (its own "allow for this session" grants).
    options = AgentOptions(cwd=cwd, interactive=True)
    return SessionHub(settings, options=options, make_provider=lambda: make_provider(settings, env),
                      provider_for=lambda own: make_provider(own, env), approvals=ScreenApprovals())


def launch_tui(settings: Settings, *, cwd: Path, env: dict[str, str], session_id: str | None = None) -> None:
    from nova.tui.app import NovaTUI

    code = run_app(NovaTUI(make_hub(settings, cwd=cwd, env=env), session_id=session_id))
    if code:
        # Textual has printed the traceback; the exit status must say the UI failed, for scripts and
        # for the person who sees only the shell prompt come back.
        print("nova: error: the terminal UI stopped on the error above; what was recorded is kept "
              "(`nova sessions list`)", file=sys.stderr)
        raise SystemExit(code)


def run_app(app: App[Any], **run: Any) -> int:
    """Run a Textual app to its end; its exit status, non-zero when it stopped on an exception.

    Textual catches an exception raised in a handler, prints it after restoring the terminal and
    returns normally with `return_code` set to 1; without this the command would exit 0."""
    app.run(**run)
    return app.return_code or 0
