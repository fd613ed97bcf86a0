"""`--report` (nova replay, nova eval) draws with plotly, the optional `report` extra: checked before any
work is done, so a long replay does not end in an import error."""

from __future__ import annotations

import sys

import typer

__all__ = ["require_report_extra"]


def require_report_extra() -> None:
    """Return when plotly imports; otherwise print one line naming the install command and exit 2, as other
    unusable options do."""
    from nova.evaluation.report import ReportExtraMissing, require_plotly

    try:
        require_plotly()
    except ReportExtraMissing as exc:
        print(f"nova: error: {exc}", file=sys.stderr)
        raise typer.Exit(2) from None
