"""What a first `nova` in a terminal says when the terminal UI cannot open: the install line of the
extra it needs, and what works without it."""

from __future__ import annotations

import sys

import typer

__all__ = ["TUI_INSTALL_LINE", "require_tui_extra"]

TUI_INSTALL_LINE = "pip install 'nova-agent[tui]'"


def require_tui_extra(help_text: str) -> None:
    """Return when the terminal UI's library imports; otherwise print the help, then what to install and
    what to try meanwhile, and exit 1 (the UI that was asked for did not open)."""
    try:
        import textual  # noqa: F401
    except ImportError as exc:
        # Absent, or installed without something it needs: either way the extra's install line fixes it.
        broken = "" if getattr(exc, "name", None) == "textual" else f" (importing it failed: {exc})"
        typer.echo(help_text)
        print(
            f"\nnova: the terminal UI needs the `tui` extra{broken}: {TUI_INSTALL_LINE} (in a checkout: "
            "pip install -e '.[tui]'), then run `nova` again.\n"
            "Without it: `nova demo` runs the offline demo, `nova --provider demo run \"list the files\"` "
            "runs one task on the offline demo model, `nova run \"TASK\"` one task on your provider.",
            file=sys.stderr,
        )
        raise typer.Exit(1) from None
