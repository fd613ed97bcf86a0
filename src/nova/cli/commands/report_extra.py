"""`--report` (nova replay, nova eval): checked before any work is done, so a long replay does not end in
an import error or an unwritable path. The pages are drawn with plotly, the optional `report` extra."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from nova.cli.commands.errors import user_errors

__all__ = ["require_report_extra", "write_report"]


def require_report_extra(target: Path) -> None:
    """Return when plotly imports and `target`'s folder exists; otherwise print one line saying what to do
    and exit 2, as other unusable options do."""
    from nova.evaluation.report import ReportExtraMissing, require_plotly

    try:
        require_plotly()
    except ReportExtraMissing as exc:
        print(f"nova: error: {exc}", file=sys.stderr)
        raise typer.Exit(2) from None
    folder = target.parent
    if not folder.is_dir():
        print(f"nova: error: --report: no folder {folder} to write {target.name} in", file=sys.stderr)
        raise typer.Exit(2)


def write_report(target: Path, page: str) -> None:
    """Write the page; a failure (a full disk, a folder without write permission) is one line and exit 1."""
    with user_errors(exit_code=1, os_errors=True):
        target.write_text(page, encoding="utf-8")
    # On stderr, so a `--json` run's standard output stays one JSON document.
    size = len(page.encode("utf-8"))
    # A page without plots (eval's memory scenarios alone) is a few KB: "0.0 MB" would read as empty.
    shown = f"{size / 1_000_000:.1f} MB" if size >= 100_000 else f"{max(1, round(size / 1000))} KB"
    print(f"report written to {target} ({shown}, opens offline in any browser)", file=sys.stderr)
