"""What a first run says next: bare `nova` in a terminal without the terminal UI's extra (its install
line, and what works without it), and the end of `nova demo` (where to go from the demo)."""

from __future__ import annotations

import sys

import typer

from nova.version import install_line

__all__ = ["TUI_INSTALL_LINE", "demo_next_steps", "require_tui_extra"]

TUI_INSTALL_LINE = install_line("tui")


def require_tui_extra(help_text: str) -> None:
    """Return when the terminal UI's library imports; otherwise print the help, then what to install and
    what to try meanwhile, and exit 1 (the UI that was asked for did not open)."""
    try:
        import textual  # noqa: F401
    except ImportError as exc:
        # Absent, or installed without something it needs: either way the extra's install line fixes it.
        broken = "" if exc.name == "textual" else f" (importing it failed: {exc})"
        typer.echo(help_text)
        print(
            f"\nnova: the terminal UI needs the `tui` extra{broken}: {TUI_INSTALL_LINE} (in a checkout: "
            "pip install -e '.[tui]'), then run `nova` again.\n"
            "Without it: `nova demo` runs the offline demo, `nova --provider demo run \"list the files\"` "
            "runs one task on the offline demo model, `nova run \"TASK\"` one task on your provider.",
            file=sys.stderr,
        )
        raise typer.Exit(1) from None


def demo_next_steps(session_id: str, *, tui_installed: bool) -> str:
    """The lines `nova demo` ends with: each a command that works as printed, and what it shows."""
    tui = "" if tui_installed else f" (after {TUI_INSTALL_LINE})"
    steps = [
        (f"nova sessions show {session_id}", "what was recorded"),
        (f"nova context {session_id}", "what the model saw, segment by segment"),
        ('nova resume last "what did you change?"', "go on with the demo session (in its project, on the demo model)"),
        ("nova --provider demo", f"the terminal UI on the demo model{tui}"),
        ('export ANTHROPIC_API_KEY=...; nova run "TASK"',
         "real work (`nova config show` lists every provider and whether its key is set)"),
    ]
    width = max(len(command) for command, _ in steps)
    return "\n".join(["Next:", *(f"  {command:<{width}}  {what}" for command, what in steps)])
