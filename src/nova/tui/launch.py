"""`nova` with no arguments in a terminal: the TUI on the configured provider, in the current folder."""

from __future__ import annotations

from pathlib import Path

from nova.app import AgentOptions
from nova.host import SessionHub
from nova.providers.factory import make_provider
from nova.settings import Settings
from nova.tui.approval import Approver

__all__ = ["launch_tui", "make_hub"]


def make_hub(settings: Settings, *, cwd: Path, env: dict[str, str]) -> SessionHub:
    make_provider(settings, env)  # a missing key or SDK stops here, before the screen opens
    # Interactive: a write or a command the rules do not settle is put to the person at the terminal.
    options = AgentOptions(cwd=cwd, interactive=True, ask=Approver())
    return SessionHub(settings, options=options, make_provider=lambda: make_provider(settings, env))


def launch_tui(settings: Settings, *, cwd: Path, env: dict[str, str], session_id: str | None = None) -> None:
    from nova.tui.app import NovaTUI

    NovaTUI(make_hub(settings, cwd=cwd, env=env), session_id=session_id).run()
